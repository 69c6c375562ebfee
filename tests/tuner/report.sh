#!/usr/bin/env bash
# normtune report: from a database made by a short real tune (two ops, two dtypes, two widths),
# a well-formed SVG and HTML page naming the device, with one tuned and one heuristic series per
# dtype tuned in each op's panel and the copy line; a database of the older schema 2 (no
# heuristic, no copy bandwidth) still draws its winners; two row counts of one row class draw
# two panels, never one line, under a caption whose account of points above the copy line is
# true; usage errors and empty, missing databases give the documented statuses and say what to
# do.
source "$(dirname "$0")/common.sh"
DB=$WORK/tuning.db

step "tune layernorm and rmsnorm, f32 and f16, cols 256 and 1024"
tune "$DB" tune --ops layernorm,rmsnorm --dtypes f32,f16 --cols 256,1024 --fraction 0.01
device=$(sed -n 's/^normtune: tuning \(.*\) (.*) into .*/\1/p' "$WORK/tune.out")
[[ -n $device ]] || fail "tune did not name the device"

# check_svg FILE OPS DTYPES COPY HEURISTIC: FILE parses as XML, names the device, and each op of
# OPS (comma-separated) has one tuned series per dtype of DTYPES, and heuristic series and a copy
# line when HEURISTIC / COPY are 1; no coordinate is NaN or infinite.
check_svg() {
  python3 - "$1" "$device" "$2" "$3" "$4" "$5" <<'EOF' || fail "$1 is not the report wanted"
import sys, xml.dom.minidom
path, device, ops, dtypes, copy, heuristic = sys.argv[1:]
doc = xml.dom.minidom.parse(path)  # raises on XML that is not well-formed
svg = doc.getElementsByTagName("svg")
assert len(svg) == 1, "one <svg> element, found %d" % len(svg)
def text(node):
    return "".join(c.data if c.nodeType == c.TEXT_NODE else text(c) for c in node.childNodes)
texts = [text(t) for t in doc.getElementsByTagName("text")]
assert any(device in t for t in texts), "no <text> names the device %r" % device
for want in ("cols (elements per row, log scale)", "GB/s (bytes moved / kernel time)"):
    assert any(want in t for t in texts), "no axis label %r" % want
series = {}
for g in doc.getElementsByTagName("g"):
    cls = g.getAttribute("class").split()
    if cls[:1] == ["series"]:
        key = (g.getAttribute("data-op"), cls[1], cls[2])
        series[key] = series.get(key, 0) + 1
        points = g.getElementsByTagName("circle") + g.getElementsByTagName("rect")
        assert points, "series %s has no point" % (key,)
for op in ops.split(","):
    for dtype in dtypes.split(","):
        assert series.get((op, "tuned", dtype)) == 1, "want one tuned %s %s series: %s" % (
            op, dtype, series)
        if heuristic == "1":
            assert series.get((op, "heuristic", dtype)) == 1, "no heuristic %s %s: %s" % (
                op, dtype, series)
    for kind in ("tuned", "heuristic"):
        extra = [d for (o, k, d) in series if o == op and k == kind and d not in dtypes]
        assert not extra, "series of dtypes not tuned: %s" % extra
if heuristic == "0":
    assert not [k for k in series if k[1] == "heuristic"], "heuristic series from nowhere"
copies = [l for l in doc.getElementsByTagName("line") if l.getAttribute("class") == "copy"]
assert len(copies) == (len(ops.split(",")) if copy == "1" else 0), "%d copy lines" % len(copies)
for el in doc.getElementsByTagName("*"):
    for name in ("x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "points", "d", "height"):
        v = el.getAttribute(name).lower()
        assert "nan" not in v and "inf" not in v, "<%s %s=%r>" % (el.tagName, name, v)
print("   %s: %d series, %d copy lines, device named" % (path.split("/")[-1], len(series),
                                                         len(copies)))
EOF
}

step "report --out FILE.svg"
expect_rc 0 svg "$NORMTUNE" report --db "$DB" --out "$WORK/report.svg"
expect_in "$WORK/svg.err" "wrote $WORK/report.svg: 1 device, 2 panels, [0-9]+ points" \
  "report says what it wrote"
expect_in "$WORK/report.svg" 'kernel sources [0-9a-f]{16} forward, [0-9a-f]{16} backward' \
  "the report names the kernel hash of each program family"
head -c 100 "$WORK/report.svg" | grep -q '^<?xml version="1.0"' || fail "no XML declaration"
check_svg "$WORK/report.svg" layernorm,rmsnorm f32,f16 1 1

step "report --out FILE.html, and - for standard output"
expect_rc 0 html "$NORMTUNE" report --db "$DB" --out "$WORK/report.html" --quiet
[[ ! -s $WORK/html.err ]] || fail "--quiet wrote to stderr: $(cat "$WORK/html.err")"
head -n 1 "$WORK/report.html" | grep -q '^<!DOCTYPE html>' || fail "the HTML page has no doctype"
check_svg "$WORK/report.html" layernorm,rmsnorm f32,f16 1 1
expect_rc 0 stdout "$NORMTUNE" report --db "$DB" --out -
check_svg "$WORK/stdout.out" layernorm,rmsnorm f32,f16 1 1

step "one panel per row count: a line never joins two row counts; the caption is true"
# rows 300 and 400 share a row class (257-4096), whose winner is one per cols: before issue 23 one
# panel drew 300 x 256 and 400 x 512 as one line.
tune "$WORK/rows.db" rows300 --ops layernorm --cols 256 --rows 300
tune "$WORK/rows.db" rows400 --ops layernorm --cols 512 --rows 400
expect_rc 0 rows_svg "$NORMTUNE" report --db "$WORK/rows.db" --out "$WORK/rows.svg"
python3 - "$WORK/rows.svg" <<'EOF' || fail "the report joins row counts or says what is not true"
import re, sys, xml.dom.minidom
doc = xml.dom.minidom.parse(sys.argv[1])
def text(node):
    return "".join(c.data if c.nodeType == c.TEXT_NODE else text(c) for c in node.childNodes)
texts = [text(t) for t in doc.getElementsByTagName("text")]
for rows in (300, 400):
    want = "layernorm, rows %d (row class 257-4096)" % rows
    assert want in texts, "no panel titled %r: %s" % (want, [t for t in texts if "rows" in t])
for g in doc.getElementsByTagName("g"):
    if g.getAttribute("class").split()[:1] != ["series"]:
        continue
    titles = [text(t) for t in g.getElementsByTagName("title")]
    heights = {re.search(r", (\d+) x \d+:", t).group(1) for t in titles}
    assert len(heights) == 1, "one series draws rows %s: %s" % (sorted(heights), titles)
caption = " ".join(texts[:6])
assert "stays in cache" not in caption, "the caption still says the shape stays in cache"
assert "Above the copy line" in caption and "64 MiB a matrix" in caption, caption
print("   2 panels (rows 300, 400), every series of one row count; caption: %s" %
      [t for t in texts if t.startswith("Above") or t.startswith("Timing")])
EOF

step "a database of schema 2 (tuned before the heuristic and copy bandwidth were stored)"
cp "$DB" "$WORK/old.db"
python3 - "$WORK/old.db" <<'EOF' || fail "cannot make a schema-2 database"
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.executescript("DROP TABLE heuristic; DROP TABLE copy_bandwidth; PRAGMA user_version = 2;")
con.close()
EOF
cp "$WORK/old.db" "$WORK/old.copy"
expect_rc 0 old "$NORMTUNE" report --db "$WORK/old.db" --out "$WORK/old.svg"
check_svg "$WORK/old.svg" layernorm,rmsnorm f32,f16 0 0
grep -q 'heuristic: not stored' "$WORK/old.svg" ||
  fail "the report of the old database does not say why it draws no heuristic"
cmp -s "$WORK/old.db" "$WORK/old.copy" || fail "report changed the database"

step "nothing to draw: status 3; missing database: 1; usage: 2"
printf '{"format": "clnorm-tuning", "format_version": 1, "devices": []}' >"$WORK/empty.json"
expect_rc 0 import_empty "$NORMTUNE" import "$WORK/empty.json" --db "$WORK/empty.db"
expect_rc 3 empty "$NORMTUNE" report --db "$WORK/empty.db" --out "$WORK/empty.svg"
expect_in "$WORK/empty.err" "holds no tuned result: run .normtune tune. first" \
  "report on an empty database says what to do"
[[ ! -e $WORK/empty.svg ]] || fail "report wrote a file with nothing to draw"
expect_rc 1 missing "$NORMTUNE" report --db "$WORK/none.db" --out "$WORK/none.svg"
expect_in "$WORK/missing.err" "no tuning database at '$WORK/none.db'.*normtune tune" \
  "report on a missing database says what to do"
[[ ! -e $WORK/none.db ]] || fail "report created the database"
expect_rc 2 no_out "$NORMTUNE" report --db "$DB"
expect_in "$WORK/no_out.err" "report needs --out FILE.svg or FILE.html" "report without --out"
expect_rc 2 png "$NORMTUNE" report --db "$DB" --out "$WORK/r.png"
expect_in "$WORK/png.err" 'should end in .svg, .html or .htm' "report --out with another type"
expect_rc 1 unwritable "$NORMTUNE" report --db "$DB" --out "$WORK/no/such/dir/r.svg"
expect_in "$WORK/unwritable.err" "cannot write $WORK/no/such/dir/r.svg" "an unwritable --out"
pass
