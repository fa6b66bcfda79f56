#!/usr/bin/env bash
# Generates the SocketCam decoding benchmark image set.
#
#   bench/make-images.sh OUTDIR [N]      (N defaults to 200)
#
# Writes N PNG images, one symbol each, cycling through the symbologies both zbarimg and ZXingReader read
# (QR, Code 128, Code 39, EAN-13, EAN-8, UPC-A, UPC-E, ITF, Codabar, DataBar, DataBar Expanded) and three
# only ZXingReader reads (DataMatrix, Aztec, PDF417), and OUTDIR/manifest.tsv with one line per image:
#   file<TAB>format<TAB>expected
# `file` is relative to OUTDIR, `format` a Decoders.BarcodeFormat name, `expected` the payload exactly as
# BarcodeReader returns it: EAN/UPC with check digit, UPC-A as 12 digits, Codabar with start/stop
# characters, DataBar as "01" + GTIN-14, DataBar Expanded as its GS1 element string (only fixed-length AIs,
# so no GS separators). Lines starting with '#' are comments.
#
# Images stay below 500 px in at least one direction: Debian's ZXingReader (zxing-cpp 1.4.0, built with
# assertions) aborts on any linear symbol in larger images, which would turn the benchmark into a crash count.
# Payloads are deterministic (derived from the index) so runs are comparable.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 || ! ${2:-1} =~ ^[0-9]+$ ]]; then
  echo "usage: $0 OUTDIR [N]" >&2
  exit 64
fi
out=$1
count=${2:-200}
for tool in zint qrencode; do
  command -v "$tool" >/dev/null || { echo "$0: $tool not found (Debian package: $tool)" >&2; exit 69; }
done
mkdir -p "$out"
manifest="$out/manifest.tsv"
printf '# file\tformat\texpected\n' >"$manifest"

# GS1 mod-10 check digit of a digit string (weights 3,1,3,... from the right).
check_digit() {
  local digits=$1 sum=0 weight=3 i
  for ((i = ${#digits} - 1; i >= 0; i--)); do
    sum=$((sum + ${digits:i:1} * weight))
    weight=$((4 - weight))
  done
  echo $(((10 - sum % 10) % 10))
}

# n pseudo-random digits from seed (a linear congruential sequence; deterministic, no $RANDOM).
digits() {
  local n=$1 seed=$2 s i result=""
  s=$(((seed * 2654435761 + 12345) % 4294967296))
  for ((i = 0; i < n; i++)); do
    s=$(((s * 1103515245 + 12345) % 2147483648))
    result+=$(((s >> 16) % 10))
  done
  echo "$result"
}

kinds=(qrCode qrencode code128 code39 ean13 ean8 upcA upcE itf codabar dataBar dataBarExpanded dataMatrix aztec pdf417)

for ((i = 0; i < count; i++)); do
  kind=${kinds[i % ${#kinds[@]}]}
  file=$(printf '%04d-%s.png' "$i" "$kind")
  path="$out/$file"
  scale=$((2 + i % 2))
  rotate=()
  # Every seventh linear symbol is rotated, so rotation handling is measured too.
  if ((i % 7 == 3)); then rotate=(--rotate=$((90 * (1 + i % 3)))); fi
  d=$(digits 14 "$i")
  zint_args=()
  format=$kind
  case $kind in
    qrCode)
      expected="SocketCam bench $i ${d:0:6}"
      zint_args=(-b QRCODE -d "$expected")
      ;;
    qrencode)
      format=qrCode
      expected="https://example.com/item/$i?ref=${d:0:8}"
      qrencode -s $((3 + i % 2)) -o "$path" "$expected"
      ;;
    code128)
      expected="C128-${d:0:5}-Ab/$i"
      zint_args=(-b CODE128 -d "$expected" "${rotate[@]}")
      ;;
    code39)
      expected="C39 ${d:0:6} X$i"
      zint_args=(-b CODE39 -d "$expected" "${rotate[@]}")
      ;;
    ean13)
      body="4${d:0:11}"
      expected="$body$(check_digit "$body")"
      zint_args=(-b EANX -d "$body" "${rotate[@]}")
      ;;
    ean8)
      body="5${d:0:6}"
      expected="$body$(check_digit "$body")"
      zint_args=(-b EANX -d "$body")
      ;;
    upcA)
      body="0${d:0:10}"
      expected="$body$(check_digit "$body")"
      zint_args=(-b UPCA -d "$body" "${rotate[@]}")
      ;;
    upcE)
      # UPC-E 0 m1..m5 X with X in 5...9 expands to UPC-A 0 m1..m5 0000 X (manufacturer's m5 != 0); the
      # check digit is that UPC-A's.
      manufacturer="${d:0:4}$((1 + ${d:4:1} % 9))"
      last=$((5 + ${d:5:1} % 5))
      expected="0${manufacturer}${last}$(check_digit "0${manufacturer}0000${last}")"
      zint_args=(-b UPCE -d "0${manufacturer}${last}")
      ;;
    itf)
      expected="${d:0:10}"
      zint_args=(-b C25INTER -d "$expected" "${rotate[@]}")
      ;;
    codabar)
      expected="A${d:0:8}B"
      zint_args=(-b CODABAR -d "$expected")
      ;;
    dataBar)
      body="0${d:0:12}"
      expected="01$body$(check_digit "$body")"
      zint_args=(-b DBAR_OMN -d "$body")
      ;;
    dataBarExpanded)
      body="1${d:0:12}"
      gtin="$body$(check_digit "$body")"
      weight="${d:6:6}"
      expected="01${gtin}3103${weight}"
      zint_args=(-b DBAR_EXP -d "[01]${gtin}[3103]${weight}")
      ;;
    dataMatrix)
      expected="DataMatrix bench $i ${d:0:6}"
      zint_args=(-b DATAMATRIX -d "$expected")
      ;;
    aztec)
      expected="Aztec bench $i ${d:0:6}"
      zint_args=(-b AZTEC -d "$expected")
      ;;
    pdf417)
      expected="PDF417 bench $i ${d:0:6}"
      zint_args=(-b PDF417 -d "$expected")
      ;;
  esac
  if ((${#zint_args[@]})); then
    # --quietzones: the standard light margins; zint adds none by default, and zxing-cpp's DataMatrix
    # detector needs one.
    zint --quietzones --scale=$scale -o "$path" "${zint_args[@]}" >/dev/null
  fi
  printf '%s\t%s\t%s\n' "$file" "$format" "$expected" >>"$manifest"
done
echo "$count images and manifest.tsv in $out" >&2
