#!/usr/bin/env bash
# The book (docs/, mdBook): writes its reference pages from the binary (`rackboot reference`),
# and the shell completions and man pages the Debian package installs (dist/completions,
# dist/man: `rackboot completions`, `rackboot man`), checks every relative link in the book and
# the top-level docs, and builds it into target/book.
#   tools/book.sh [--check] [BINARY]
#   tools/book.sh --install-mdbook   only install mdBook (pinned below) if it is missing
#   --check   fail if a reference page, completion or man page in the tree differs from what the
#             binary prints (CI)
#   BINARY    default target/debug/rackboot (built if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
MDBOOK_VERSION=0.5.4
# mdBook, installed once (tools/test.sh starts this early, in the background). Only what
# `mdbook build` needs: without its `serve` and `watch` features (a web server and a file
# watcher, none of them used here) it compiles in a fraction of the time on a fresh machine.
install_mdbook() {
  if ! command -v mdbook >/dev/null || [ "$(mdbook --version | awk '{print $2}')" != "v$MDBOOK_VERSION" ]; then
    echo "book: cargo install mdbook $MDBOOK_VERSION (once; cargo shows its progress)"
    cargo install mdbook --locked --version "$MDBOOK_VERSION" --no-default-features --features search
  fi
}
[ "${1:-}" = --install-mdbook ] && { install_mdbook; exit 0; }
CHECK=0
[ "${1:-}" = --check ] && { CHECK=1; shift; }
BIN=${1:-target/debug/rackboot}
[ -x "$BIN" ] || cargo build --locked --bin rackboot
# Each generated page keeps its introduction up to the marker; what follows is the binary's.
for page in cli events; do
  file=docs/reference/$page.md
  new=$(mktemp)
  sed '/^<!-- generated: tools\/book.sh -->$/q' "$file" > "$new"
  env -u RACKBOOT_API "$BIN" reference "$page" >> "$new"   # help shows an env value when set
  if [ $CHECK = 1 ] && ! cmp -s "$new" "$file"; then
    diff -u "$file" "$new" | head -40
    echo "book: $file is not what $BIN prints: run tools/book.sh and commit it"; rm -f "$new"; exit 1
  fi
  mv "$new" "$file"
done
gen=$(mktemp -d)
for shell in bash zsh fish; do env -u RACKBOOT_API "$BIN" completions $shell > "$gen/$shell"; done
mkdir -p "$gen/man" && env -u RACKBOOT_API "$BIN" man "$gen/man" 2>/dev/null
mkdir -p "$gen/completions" && mv "$gen/bash" "$gen/completions/rackboot.bash" && mv "$gen/zsh" "$gen/completions/_rackboot" \
  && mv "$gen/fish" "$gen/completions/rackboot.fish"
for d in completions man; do
  if [ $CHECK = 1 ] && ! diff -r "dist/$d" "$gen/$d" >/dev/null 2>&1; then
    diff -ru "dist/$d" "$gen/$d" | head -40
    echo "book: dist/$d is not what $BIN prints: run tools/book.sh and commit it"; rm -rf "$gen"; exit 1
  fi
  rm -rf "dist/$d" && cp -r "$gen/$d" "dist/$d"
done
rm -rf "$gen"
python3 tools/check-links.py
install_mdbook
mdbook build docs
echo "book: target/book/index.html"
