#!/usr/bin/env bash
# CHANGELOG.md feeds the release: one text, written once, in two shapes.
#
#   scripts/changelog.sh notes <version>
#       the Markdown of `## [<version>]`'s section, without its heading: the
#       GitHub release's notes.
#   scripts/changelog.sh debian <version> <package> <deb-version> <maintainer> <date>
#       debian/changelog: an entry for <version> and one for every older
#       version below it, newest first, each item a `  *` line wrapped at 80
#       columns. <deb-version> is <version>'s Debian spelling (1.2.0~rc.1);
#       older entries use their own, spelt the same way. <date> (RFC 2822) is
#       <version>'s date unless its heading gives one (`## [1.2.0] - 2026-05-01`).
#
# Either way a <version> without a section is an error: a release must say
# what changed. CHANGELOG=<file> reads another file (the tests do).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FILE=${CHANGELOG:-$ROOT/CHANGELOG.md}

usage() {
  echo "usage: scripts/changelog.sh notes <version>" >&2
  echo "       scripts/changelog.sh debian <version> <package> <deb-version> <maintainer> <date>" >&2
  exit 2
}
[ $# -ge 2 ] || usage
mode=$1 version=$2
[ -r "$FILE" ] || { echo "error: cannot read $FILE" >&2; exit 1; }
if ! grep -qE "^## \[$(sed 's/[.]/\\./g' <<<"$version")\]( |$)" "$FILE"; then
  echo "error: $FILE has no section for $version: add '## [$version]' with what changed (move the Unreleased items there)" >&2
  exit 1
fi

case $mode in
notes)
  [ $# -eq 2 ] || usage
  awk -v v="$version" '
    /^## \[/ { if (inside) exit; inside = (index($0, "## [" v "]") == 1); next }
    inside { lines[++n] = $0 }
    END {
      first = 1; while (first <= n && lines[first] == "") first++
      last = n; while (last >= first && lines[last] == "") last--
      for (i = first; i <= last; i++) print lines[i]
    }' "$FILE"
  ;;
debian)
  [ $# -eq 6 ] || usage
  package=$3 deb_version=$4 maintainer=$5 date=$6
  # Markdown to Debian changelog items: a `### Heading` becomes an item of
  # its own, a `- item` (with its indented continuation lines) or a
  # paragraph becomes one `  *` item; each is re-wrapped to 80 columns.
  awk -v v="$version" -v pkg="$package" -v debv="$deb_version" -v maint="$maintainer" -v date="$date" '
    function flush(   words, n, i, line, indent) {
      if (item == "") return
      n = split(item, words, /[ \t]+/)
      line = "  *"; indent = "    "
      for (i = 1; i <= n; i++) {
        if (words[i] == "") continue
        if (length(line) + 1 + length(words[i]) > 80 && line != "  *" && line != indent) { print line; line = indent words[i] }
        else line = line " " words[i]
      }
      print line
      item = ""
    }
    function close_entry() {
      flush()
      if (open) { print ""; print " -- " maint "  " entry_date; open = 0 }
    }
    function debian_version(s) { sub(/-/, "~", s); return s }
    /^## \[/ {
      close_entry()
      heading = $0
      name = heading; sub(/^## \[/, "", name); sub(/\].*$/, "", name)
      if (name == v) started = 1
      if (!started || name == "Unreleased") next
      if (printed) print ""
      printed = 1; open = 1
      print pkg " (" (name == v ? debv : debian_version(name)) ") unstable; urgency=medium"
      print ""
      entry_date = date
      if (match(heading, /[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]/)) {
        cmd = "date -u -R -d \"" substr(heading, RSTART, RLENGTH) " 12:00\""
        cmd | getline entry_date; close(cmd)
      }
      next
    }
    !open { next }
    /^### / { flush(); item = substr($0, 5) ":"; flush(); next }
    /^[-*] / { flush(); item = substr($0, 3); next }
    /^[ \t]*$/ { flush(); next }
    { item = (item == "" ? "" : item " ") $0 }
    END { close_entry() }
  ' "$FILE"
  ;;
*) usage ;;
esac
