#!/bin/sh
# docs/cli.md's reference half, made from pbench's own help: `pbench help`
# and `pbench help COMMAND` for every command it lists, so the page and the
# help (and the man page, made from the same tables) cannot disagree.
#
#   scripts/cli-doc.sh build/pbench           rewrites that half of docs/cli.md
#   scripts/cli-doc.sh build/pbench --check   exit 1, with the difference, when
#                                             docs/cli.md is not what the help says
#                                             (ctest's test_cli_doc)
set -eu
pbench=${1:?usage: scripts/cli-doc.sh PBENCH [--check]}
mode=${2:-write}
doc="$(dirname "$0")/../docs/cli.md"
marker='<!-- the rest of this page is made by scripts/cli-doc.sh from pbench help: edit the help, then run it -->'

grep -qxF "$marker" "$doc" || { echo "cli-doc: $doc has no line '$marker'" >&2; exit 1; }
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
    sed "/^$(printf '%s' "$marker" | sed 's/[][\/.*^$]/\\&/g')\$/q" "$doc"
    echo
    echo '## pbench help'
    echo
    echo '```'
    "$pbench" help
    echo '```'
    # Every command the help lists, in its order: "  pbench NAME ..." lines.
    "$pbench" help | sed -n 's/^ *pbench \([a-z][a-z]*\).*/\1/p' | awk '!seen[$0]++' |
        grep -vx 'help\|version' | while read -r command; do
            echo
            echo "## pbench $command"
            echo
            echo '```'
            "$pbench" help "$command"
            echo '```'
        done
} >"$tmp"
if [ "$mode" = --check ]; then
    if ! diff -u "$doc" "$tmp"; then
        echo "cli-doc: docs/cli.md differs from pbench's help (above); run scripts/cli-doc.sh $pbench" >&2
        exit 1
    fi
    echo "cli-doc: docs/cli.md is pbench's help"
else
    cp "$tmp" "$doc"
fi
