// Reads the tables the C library exports (kinds, fields, enumerations, pixel
// formats). The loader compares them with the generated gen/kinds.ts; the
// generator writes gen/kinds.ts from them.

import type { Symbols } from "../gen/symbols.ts";

/** One descriptor field, as gpures_field_info describes it. */
export interface FieldRow {
  path: string;
  doc: string;
  type: number;
  offset: number;
  size: number;
  count: number;
  stride: number;
  countOffset: number;
  presentBit: number;
  enumSet: number;
  zeroStatus: number;
  flags: number;
}

/** One kind, as gpures_kind_info describes it, with its fields. */
export interface KindRow {
  id: number;
  name: string;
  snake: string;
  ownership: number;
  platforms: number;
  descSize: number;
  /** 0: a resource; 1: a SyncPoint (gpures_kind_info.family). */
  family?: number;
  fields: FieldRow[];
}

/** One named enumeration value. */
export interface EnumRow {
  set: number;
  value: number;
  name: string;
}

function rows(
  fn: (count: Uint32Array) => Deno.PointerValue,
): [Deno.UnsafePointerView, number] {
  const count = new Uint32Array(1);
  const ptr = fn(count);
  if (ptr === null) throw new Error("gpures returned no table");
  return [new Deno.UnsafePointerView(ptr), count[0]];
}

function cString(view: Deno.UnsafePointerView, offset: number): string {
  const ptr = view.getPointer(offset);
  return ptr === null ? "" : Deno.UnsafePointerView.getCString(ptr);
}

/** Reads every kind and its field rows. */
export function readKinds(lib: Symbols): KindRow[] {
  const [view, n] = rows((c) => lib.gpures_kind_table(c));
  const kinds: KindRow[] = [];
  for (let i = 0; i < n; i++) {
    const at = i * 40;
    const id = view.getUint32(at);
    kinds.push({
      id,
      ownership: view.getUint32(at + 4),
      platforms: view.getUint32(at + 8),
      descSize: view.getUint32(at + 12),
      family: view.getUint32(at + 20),
      name: cString(view, at + 24),
      snake: cString(view, at + 32),
      fields: readFields(lib, id),
    });
  }
  return kinds;
}

/** The rows of gpures_frame_meta, as a pseudo-kind (id 0) so one codec compiler serves both. */
export function readMetaKind(lib: Symbols): KindRow {
  const fields = readFields(lib, 0, (c) => lib.gpures_meta_fields(c));
  const end = Math.max(...fields.map((f) => f.offset + f.size * f.count));
  const descSize = Math.ceil(end / 8) * 8;
  return {
    id: 0,
    ownership: 0,
    platforms: 0,
    descSize,
    name: "FrameMeta",
    snake: "frame_meta",
    fields,
  };
}

function readFields(
  lib: Symbols,
  kind: number,
  table = (c: Uint32Array) => lib.gpures_kind_fields(kind, c),
): FieldRow[] {
  const [view, n] = rows(table);
  const fields: FieldRow[] = [];
  for (let i = 0; i < n; i++) {
    const at = i * 56;
    const u = (k: number) => view.getUint32(at + 16 + 4 * k);
    fields.push({
      path: cString(view, at),
      doc: cString(view, at + 8),
      type: u(0),
      offset: u(1),
      size: u(2),
      count: u(3),
      stride: u(4),
      countOffset: u(5),
      presentBit: u(6),
      enumSet: u(7),
      zeroStatus: u(8),
      flags: u(9),
    });
  }
  return fields;
}

/** Reads every named enumeration value. */
export function readEnums(lib: Symbols): EnumRow[] {
  const [view, n] = rows((c) => lib.gpures_enum_table(c));
  const values: EnumRow[] = [];
  for (let i = 0; i < n; i++) {
    values.push({
      set: view.getUint32(i * 16),
      value: view.getUint32(i * 16 + 4),
      name: cString(view, i * 16 + 8),
    });
  }
  return values;
}

/** One plane of a pixel format. */
export interface PlaneRow {
  hsub: number;
  vsub: number;
  channels: number;
  blockWidth: number;
  bytesPerSample: number;
}

/** One row of the pixel format table. */
export interface PixelFormatRow {
  id: number;
  numPlanes: number;
  bitsPerSample: number;
  flags: number;
  drmFourcc: number;
  planes: PlaneRow[];
}

/** Reads the pixel format table. */
export function readPixelFormats(lib: Symbols): PixelFormatRow[] {
  const [view, n] = rows((c) => lib.gpures_pixel_format_table(c));
  const formats: PixelFormatRow[] = [];
  for (let i = 0; i < n; i++) {
    const at = i * 56;
    const numPlanes = view.getUint32(at + 4);
    const planes: PlaneRow[] = [];
    for (let p = 0; p < numPlanes; p++) {
      const pa = at + 24 + p * 8;
      planes.push({
        hsub: view.getUint8(pa),
        vsub: view.getUint8(pa + 1),
        channels: view.getUint8(pa + 2),
        blockWidth: view.getUint8(pa + 3),
        bytesPerSample: view.getUint32(pa + 4),
      });
    }
    formats.push({
      id: view.getUint32(at),
      numPlanes,
      bitsPerSample: view.getUint32(at + 8),
      flags: view.getUint32(at + 12),
      drmFourcc: view.getUint32(at + 16),
      planes,
    });
  }
  return formats;
}
