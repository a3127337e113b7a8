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
#   DIR/utomo/Extraction/{big5-05,big5-09,big5-13,big5-17,chaos-all}/{html,gold}
#       Utomo & Leu's extraction sets (MSVCode/ir-research-data, research
#       use only): "big9", 360 pages of 9 news sites in 2005-2017, and
#       "chaos", 360 pages of about 240 sites (2017); human gold standard.
#   DIR/cpe/{input,GoldStandard}
#       CleanPortalEval (ppke-nlpg/CleanPortalEval; Endrédy & Novák 2013),
#       71 pages of 4 news portals and blogs, no licence stated.
#   DIR/traf/{evaldata.json,eval,cache}
#       trafilatura's evaluation set (adbar/trafilatura tests/, Apache-2.0):
#       about 990 pages, multilingual, labelled by snippets the main text
#       must and must not contain.
#
# Dragnet's and CleanEval's pages are reserved for a benchmark kept outside
# this repository: never fetch them here, nor a combined set holding them.
#
# MIRROR=/path/with/<owner>+<name>/repo git directories is used instead of
# GitHub when set (an offline machine with mirrored repositories).
set -euo pipefail
dir=${1:?usage: reader-corpora.sh DIR}
mkdir -p "$dir/aeb" "$dir/l3s" "$dir/utomo" "$dir/cpe" "$dir/traf"

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
[[ -d $dir/utomo/Extraction ]] ||
	fetch MSVCode/ir-research-data cbb428cea48e1392496a6542b610fb422a436b52 "$dir/utomo" Extraction
[[ -d $dir/cpe/input ]] ||
	fetch ppke-nlpg/CleanPortalEval 517726d64d8ded8846bf27ae2808853b1cd0ffe8 "$dir/cpe" input GoldStandard
if [[ ! -f $dir/traf/evaldata.json ]]; then
	fetch adbar/trafilatura e90b0ef51ab026fdb905fb6c5b3c84dd3d784fd5 "$dir/traf" tests/evaldata.json tests/eval tests/cache
	mv "$dir/traf/tests/evaldata.json" "$dir/traf/tests/eval" "$dir/traf/tests/cache" "$dir/traf/"
	rmdir "$dir/traf/tests"
fi
echo "corpora in $dir: $(ls "$dir/aeb/html" | wc -l) AEB pages, $(ls "$dir/l3s/original" | wc -l) L3S-GN1 pages," \
	"$(ls "$dir"/utomo/Extraction/*/gold | grep -c txt) Utomo pages, $(ls "$dir/cpe/GoldStandard" | wc -l) CleanPortalEval pages," \
	"$(ls "$dir/traf/eval" "$dir/traf/cache" | grep -c html) trafilatura pages"
