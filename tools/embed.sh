#!/bin/sh
# Turn a file into a C source defining `const char NAME[]` (NUL-terminated)
# and `const size_t NAME_len`. Usage: tools/embed.sh NAME INPUT > OUTPUT.c
set -eu
name=$1
input=$2
echo "/* Generated from $input by tools/embed.sh; do not edit. */"
echo "#include <stddef.h>"
echo "const char $name[] = {"
od -An -v -tx1 "$input" | sed -e 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'
echo "0x00};"
echo "const size_t ${name}_len = sizeof $name - 1;"
