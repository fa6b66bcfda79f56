#!/usr/bin/env bash
# Decodes a benchmark image set (bench/make-images.sh) with reference decoders and scores them against its
# manifest: wall time for one invocation over all images, symbols read correctly, missed, and misreads.
#
#   bench/decode-images.sh IMAGEDIR [TOOL...]
#
# TOOL is one of
#   zbarimg      ZBar's zbarimg (zbar-tools), all symbologies it enables by default
#   zxingreader  zxing-cpp's ZXingReader (zxing-cpp-tools)
#   capture      the command in $CAPTURE_DECODE (e.g. "capture socketcam decode --tsv"), run once with all
#                image paths appended; it must print one line per symbol: FILE<TAB>FORMAT<TAB>TEXT
# Default: zbarimg zxingreader.
#
# Results are compared as text after per-format normalization, because the tools spell the same symbol
# differently: UPC-A as 12 or 13 digits, UPC-E as 8 digits or expanded to EAN-13, DataBar with or without "01", DataBar Expanded with or without
# "(AI)" parentheses, Codabar with or without start/stop characters. Formats are reported from the
# manifest. Raw outputs are kept in IMAGEDIR/results-TOOL.tsv.
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 IMAGEDIR [zbarimg|zxingreader|capture ...]" >&2
  exit 64
fi
dir=${1%/}
shift
tools=("$@")
((${#tools[@]})) || tools=(zbarimg zxingreader)
manifest="$dir/manifest.tsv"
[[ -r $manifest ]] || { echo "$0: no $manifest (run bench/make-images.sh first)" >&2; exit 66; }

mapfile -t files < <(grep -v '^#' "$manifest" | cut -f1 | awk '!seen[$0]++')
paths=()
for file in "${files[@]}"; do paths+=("$dir/$file"); done

now_ns() { date +%s%N; }

# Each runner prints FILE<TAB>TEXT lines (FILE relative to IMAGEDIR) on stdout.
run_zbarimg() {
  # --xml keeps results per file; -q drops the summary; --nodbus avoids D-Bus (and its error noise).
  # It exits 4 when some image has no symbol, which is an expected outcome here.
  { zbarimg --nodbus -q --xml "${paths[@]}" 2>/dev/null || true; } | awk '
    /<source href=/ { match($0, /href=.[^'"'"'"]*/); file = substr($0, RSTART + 6, RLENGTH - 6); sub(/.*\//, "", file) }
    /<data>/ { text = $0; sub(/.*<data><!\[CDATA\[/, "", text); sub(/\]\]><\/data>.*/, "", text); print file "\t" text }'
}

run_zxingreader() {
  # -1: one line per symbol, "PATH FORMAT \"TEXT\"".
  # Debian's build aborts on some images (assertions, see make-images.sh): keep what it printed.
  { ZXingReader -1 "${paths[@]}" 2>/dev/null || true; } | awk '
    /"/ { file = $1; sub(/.*\//, "", file); text = $0; sub(/^[^"]*"/, "", text); sub(/"[^"]*$/, "", text); print file "\t" text }'
}

run_capture() {
  [[ -n ${CAPTURE_DECODE:-} ]] || { echo "$0: set CAPTURE_DECODE to the capture command" >&2; return 64; }
  # shellcheck disable=SC2086  # CAPTURE_DECODE is a command line, split on purpose
  $CAPTURE_DECODE "${paths[@]}" | awk -F'\t' 'NF >= 3 { file = $1; sub(/.*\//, "", file); print file "\t" $3 }'
}

# Scores FILE<TAB>TEXT results (stdin) against the manifest; prints one summary line and a per-format table.
# Plain POSIX awk (Debian's default awk is mawk).
score() {
  local tool=$1 seconds=$2
  awk -F'\t' -v tool="$tool" -v seconds="$seconds" '
    # UPC-E (number system, 6 digits, check) to its 13-digit EAN-13 form, as zbarimg reports it by default.
    function expandUPCE(t,    s, d, c, body, last) {
      s = substr(t, 1, 1); d = substr(t, 2, 6); c = substr(t, 8, 1)
      last = substr(d, 6, 1)
      if (last <= 2) body = substr(d, 1, 2) last "0000" substr(d, 3, 3)
      else if (last == 3) body = substr(d, 1, 3) "00000" substr(d, 4, 2)
      else if (last == 4) body = substr(d, 1, 4) "00000" substr(d, 5, 1)
      else body = substr(d, 1, 5) "0000" last
      return "0" s body c
    }
    function norm(format, text,    t) {
      t = text
      if (format == "ean13" || format == "upcA" || format == "isbn13") { if (length(t) == 12) t = "0" t }
      else if (format == "upcE") { if (length(t) == 8) t = expandUPCE(t); else if (length(t) == 12) t = "0" t }
      else if (format == "dataBar") { if (length(t) == 16 && substr(t, 1, 2) == "01") t = substr(t, 3) }
      else if (format == "dataBarExpanded") { gsub(/[()\035]/, "", t) }
      else if (format == "codabar") { sub(/^[A-Da-d]/, "", t); sub(/[A-Da-d]$/, "", t) }
      return t
    }
    FNR == NR {
      if ($0 ~ /^#/) next
      key = $1 SUBSEP norm($2, $3); want[key] = 1; formatOf[$1] = $2; total[$2]++; expected++
      next
    }
    {
      if (!($1 in formatOf)) next
      key = $1 SUBSEP norm(formatOf[$1], $2)
      if (key in want) { if (!(key in got)) { got[key] = 1; ok[formatOf[$1]]++; correct++ } }
      else { wrong++; bad[formatOf[$1]]++ }
    }
    END {
      printf "%-12s %7.2f s  %4d/%d read  %4d missed  %3d misread  %6.2f ms/image\n", tool, seconds, correct, expected, expected - correct, wrong, 1000 * seconds / (expected ? expected : 1)
      for (f in total) printf "    %-16s %3d/%-3d%s\n", f, ok[f], total[f], bad[f] ? sprintf("  (%d misread)", bad[f]) : "" | "sort"
      close("sort")
    }' "$manifest" -
}

for tool in "${tools[@]}"; do
  case $tool in
    zbarimg | zxingreader | capture) ;;
    *) echo "$0: unknown tool $tool" >&2; exit 64 ;;
  esac
  results="$dir/results-$tool.tsv"
  start=$(now_ns)
  "run_$tool" >"$results"
  end=$(now_ns)
  seconds=$(awk -v ns=$((end - start)) 'BEGIN { printf "%.3f", ns / 1e9 }')
  score "$tool" "$seconds" <"$results"
done
