#!/usr/bin/env bash
# reader-corpora.sh DIR fetches the labelled corpora the reader is scored
# on (e2e/bench/readereval, TestReaderEval) into DIR, each at a fixed
# commit, and lays them out as internal/reader/readeval expects:
#
#   DIR/aeb/html/<id>.html.gz, DIR/aeb/ground-truth.json
#       scrapinghub/article-extraction-benchmark (MIT), 181 pages
#   DIR/l3s/original/<id>.html, DIR/l3s/annotated/<id>.html
#       L3S-GN1 (Kohlschütter et al., WSDM 2010), 621 pages, as mirrored in
#       geodrome/page-signal. Its licence allows research use only, with no
#       redistribution: that is why no corpus page is committed here.
#
# MIRROR=/path/with/<owner>+<name>/repo git directories is used instead of
# GitHub when set (an offline machine with mirrored repositories).
set -euo pipefail
dir=${1:?usage: reader-corpora.sh DIR}
mkdir -p "$dir/aeb" "$dir/l3s"

# fetch OWNER/NAME COMMIT OUT PATH... exports PATHs of the commit into OUT.
fetch() {
	local repo=$1 commit=$2 out=$3
	shift 3
	local git
	if [[ -n ${MIRROR:-} ]]; then
		git=$MIRROR/${repo/\//+}/repo
	else
		git=$(mktemp -d)
		trap 'rm -rf "$git"' RETURN
		git -C "$git" init -q --bare
		git -C "$git" fetch -q --depth 1 "https://github.com/$repo" "$commit"
	fi
	git --git-dir "$git" archive "$commit" "$@" | tar -x -C "$out"
}

[[ -f $dir/aeb/ground-truth.json ]] ||
	fetch scrapinghub/article-extraction-benchmark 4a3bc979f76c0df73cb95fe272e2fc1b96f9f010 "$dir/aeb" html ground-truth.json
if [[ ! -d $dir/l3s/original ]]; then
	fetch geodrome/page-signal 186d8153b3d111f84865ddc180600a9cbe35ac7f "$dir/l3s" \
		L3S-GN1-20100130203947-00001/original L3S-GN1-20100130203947-00001/annotated
	mv "$dir/l3s/L3S-GN1-20100130203947-00001/original" "$dir/l3s/L3S-GN1-20100130203947-00001/annotated" "$dir/l3s/"
	rmdir "$dir/l3s/L3S-GN1-20100130203947-00001"
fi
echo "corpora in $dir: $(ls "$dir/aeb/html" | wc -l) AEB pages, $(ls "$dir/l3s/original" | wc -l) L3S-GN1 pages"
