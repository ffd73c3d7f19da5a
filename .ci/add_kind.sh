#!/usr/bin/env bash
# Proves the recipe for adding a kind (docs/architecture.md): in a copy of the
# tree, adds a throwaway kind "TestBlob" with only what the recipe names (a
# row in GPURES_KIND_LIST, its struct in gpures.h, its field rows in
# native/src/kinds/, its fixture), builds, runs the generators, then creates,
# describes, refuses and releases one from TypeScript and from C. Nothing in
# the checkout changes. Ends with "N passed, N failed" like the other suites.
#
#   bash .ci/add_kind.sh        (deno and cmake on PATH)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
result() { # name, status
  if [ "$2" -eq 0 ]; then echo "ok   $1"; passed=$((passed + 1)); else echo "FAIL $1"; failed=$((failed + 1)); fi
}

(cd "$root" && git ls-files -co --exclude-standard -z | tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$work"
cd "$work"

# 1-3: the row, the struct, the field rows.
python3 - <<'PY'
import re
lists = "native/include/gpures_lists.h"
s = open(lists).read()
# The next free id, at the end of the resource list (the recipe: a new kind takes the next id).
next_id = max(int(i) for i in re.findall(r"X\((\d+), [A-Z0-9_]+, [a-z0-9_]+, \w+, (?:BORROWED|OWNED)", s)) + 1
open("next_id", "w").write(str(next_id))
head, tail = s.split("#define GPURES_KIND_LIST(X)", 1)
body, rest = tail.split("\n\n", 1)
body += " \\\n  X(%d, TEST_BLOB, test_blob, TestBlob, BORROWED, GPURES_OS_ALL)" % next_id
s = head + "#define GPURES_KIND_LIST(X)" + body + "\n\n" + rest
open(lists, "w").write(s)
header = "native/include/gpures.h"
s = open(header).read()
s = s.replace("} gpures_wgpu_texture_desc;\n", """} gpures_wgpu_texture_desc;

/* TestBlob: a throwaway kind that proves the recipe. */
typedef struct gpures_test_blob_desc {
  uint32_t struct_size;
  uint32_t flags;
  uint64_t blob;        /* not 0 */
  uint32_t size;        /* bytes, not 0 */
  uint32_t reserved;
} gpures_test_blob_desc;
""")
open(header, "w").write(s)
open("native/src/kinds/test_blob.c", "w").write("""/* test_blob.c: TestBlob, added by .ci/add_kind.sh. */
#include "../internal.h"

#define T gpures_test_blob_desc
static const gpures_field_info test_blob_fields[] = {
  GPURES__ROW(T, blob, "blob", GPURES_FIELD_U64, GPURES_E_NULL_HANDLE, 0, "the blob"),
  GPURES__ROW(T, size, "size", GPURES_FIELD_U32, GPURES_E_ZERO_SIZE, 0, "bytes"),
};
GPURES__VARIANT(test_blob, test_blob_fields, NULL);
#undef T
""")
PY
result "the kind is added to a copy of the tree" $?

# 4: its fixture.
if true; then
  python3 - <<'PY'
import re
p = "tools/fixtures.ts"
s = open(p).read()
# The end of FIXTURES: a new kind's fixture goes last, as its id does.
m = s.find("\n};", s.find("export const FIXTURES"))
if m >= 0:
  s = s[:m] + """
  TestBlob: {
    valid: { blob: 0x1234n, size: 64 },
    changes: [nullHandle("blob", 0n), zero("size", 0)],
  },""" + s[m:]
  open(p, "w").write(s)
PY
fi

# 5: build and generate.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGPURES_BUILD_TESTS=OFF \
  -DGPURES_BUILD_TEST_HELPERS=OFF -DGPURES_BUILD_BENCH=OFF >build.log 2>&1 &&
  cmake --build build -j2 --target gpures >>build.log 2>&1
result "the library builds with the new kind" $? || true
[ "$failed" -eq 0 ] || { tail -n 20 build.log; echo "$passed passed, $failed failed"; exit 1; }
deno run --allow-ffi --allow-read --allow-write --allow-run tools/gen.ts >gen.log 2>&1
result "deno task gen writes the kind's types, class and README row" $?
deno run --allow-read --allow-write tools/gen_fixtures.ts >>gen.log 2>&1
result "the fixture generator takes the kind" $?
grep -q "gpures_fixture_fill_test_blob" native/tests/fixtures.gen.h
result "the C fixtures have TestBlob" $?
grep -q 'export class TestBlob extends GpuResource' ffi/gen/variants.ts
result "ffi/gen/variants.ts has the TestBlob class" $?
id=$(cat next_id)
grep -q "| $id | \`TestBlob\`" README.md
result "README.md lists the kind" $?

# From TypeScript: the generated class, validation, JSON, lifetime.
cat >use.ts <<TS
import assert from "node:assert/strict";
import { InvalidHandleError, liveHandles, TestBlob } from "./mod.ts";
using blob = TestBlob.create({ blob: 0x1234n, size: 64 });
assert.deepEqual(blob.describe(), { kind: "TestBlob", kindId: $id, refcount: 1, blob: 0x1234n, size: 64 });
assert.equal(blob.toJSON().blob, "4660");
assert.throws(() => TestBlob.create({ blob: 0n, size: 64 }), (e: InvalidHandleError) => e.field === "blob");
using again = blob.clone();
assert.equal(again.refcount, 2);
again.release();
blob.release();
assert.equal(liveHandles("TestBlob"), 0);
console.log("TestBlob from TypeScript: ok");
TS
deno run --allow-ffi --allow-read --allow-env use.ts
result "TypeScript creates, describes, refuses and releases a TestBlob" $?

# From C: the per-kind entry points exist and work.
cat >use.c <<C
#include <stdio.h>
#include "gpures.h"
int main(void) {
  gpures_test_blob_desc d = {sizeof d, 0, 0x1234, 64, 0};
  gpures_handle h = 0;
  if (gpures_test_blob_create(&d, NULL, &h) != GPURES_OK) return 1;
  gpures_test_blob_desc out = {sizeof out};
  if (gpures_test_blob_describe(h, &out) != GPURES_OK || out.blob != 0x1234) return 2;
  if (GPURES_KIND_MAX != $id || !gpures_kind_supported(GPURES_KIND_TEST_BLOB)) return 3;
  if (gpures_test_blob_release(h) != GPURES_OK) return 4;
  puts("TestBlob from C: ok");
  return 0;
}
C
cc -std=c11 -Inative/include use.c -Lbuild -lgpures -Wl,-rpath,"$work/build" -o use && ./use
result "C creates, describes and releases a TestBlob" $?

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
