#!/usr/bin/env bash
# The authors' src/ (cspartalis/LoTUS) into DIR, for benchmarks/authors_side_by_side.py --authors DIR; none of it is kept in this repository
#   bash tools/authors_checkout.sh _authors            # from the fetched bare copy (default /work/.mirror/cspartalis+LoTUS/repo)
#   AUTHORS_GIT=/path/to/repo.git bash tools/authors_checkout.sh DIR
set -eu
dir=${1:?usage: tools/authors_checkout.sh DIR}
git_dir=${AUTHORS_GIT:-/work/.mirror/cspartalis+LoTUS/repo}
mkdir -p "$dir"
# the Python files of src/ one by one (the fetched copy may lack its large binary blobs, which `git archive` then fails on)
git -C "$git_dir" ls-tree -r --name-only HEAD src | grep '\.py$' | while read -r f; do
  mkdir -p "$dir/$(dirname "$f")"; git -C "$git_dir" show "HEAD:$f" > "$dir/$f"
done
git -C "$git_dir" rev-parse HEAD > "$dir/COMMIT"
echo "the authors' src/ at $(cat "$dir/COMMIT") in $dir/src"
