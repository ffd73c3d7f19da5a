#!/usr/bin/env bash
# Writes fuzz_demux's seeds into native/fuzz/corpus_demux/: tiny files (64x48,
# 3 frames of testsrc2) of each container and codec the demuxer and decoders
# take, made by the ffmpeg CLI. Run again only to change the seeds; they are
# committed, so a fuzz run needs no ffmpeg CLI.
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)/corpus_demux"
mkdir -p "$out"
src=(-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 3 -pix_fmt yuv420p)
make() { # name, ffmpeg output options...
  local name=$1
  shift
  ffmpeg -hide_banner -loglevel error -y "${src[@]}" "$@" "$out/$name" || echo "skipped $name"
}
x264=(-c:v libx264 -preset ultrafast -g 2)
make h264.mp4 "${x264[@]}"
make h264-bframes.mkv -c:v libx264 -preset veryfast -bf 2 -g 3
make h264.ts "${x264[@]}"
make h264.h264 "${x264[@]}" -f h264
make h264.flv "${x264[@]}"
make vp8.webm -c:v libvpx -deadline realtime
make vp9.ivf -c:v libvpx-vp9 -deadline realtime
make vp9.mp4 -c:v libvpx-vp9 -deadline realtime
make av1.mkv -c:v libaom-av1 -cpu-used 8 -row-mt 1
make hevc.mp4 -c:v libx265 -preset ultrafast -x265-params log-level=none
make hevc.ts -c:v libx265 -preset ultrafast -x265-params log-level=none
ls -l "$out"
