#!/usr/bin/env bash
# Fetch the real document corpora of the dev eval sets in ../evalsets, from Debian 12's packages
# (and, for the documentation-site sets sphinx_rst and mkdocs_md, text_docs' docutils FAQ and the
# notebooks set, from PyPI source distributions).
# Usage: benchmarks/corpora/fetch.sh [DEST] [SET...]
#   DEST  default $HOME/.cache/bench-corpora;  SET  default: all of the sets below.
# Result: DEST/<set>/ is a source root (the "doc" paths of evalsets/<set>.jsonl are relative to it);
#         DEST/_extra/<set>/ holds material a generator reads but that must not be indexed
#         (indexes and completion files that contain the queries' wording).
# Each package is asked for at the version the eval sets were made from; if the archive no longer
# has it (a point release replaced it), the current version is taken and a warning printed: check
# the generator's output (it refuses gold labels that no longer occur) before trusting old numbers.
# PyPI sdists are pinned exactly (a release never changes); they are fetched with "$PYTHON -m pip"
# (default: the repository's .venv, else python3). A set made from a Debian *source* package
# (mail_lkml) downloads it with apt-get source through a private deb-src list derived from the
# machine's own Debian entries (the system's apt configuration is left as it is) and checks the
# upstream tarball's sha256.
set -euo pipefail
dest=${1:-$HOME/.cache/bench-corpora}
shift || true
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(python_faq redis_commands debian_faq flex_manual git_commands git_asciidoc pdf_docs mail_ham man_pages docbook_faq info_manuals glib_api sphinx_rst mkdocs_md mail_lkml text_docs pdf_scanned pdf_tables python_faq_site notebooks perl_pod pg_sql)
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${PYTHON:-}" ]; then :
elif [ -x "$here/../../.venv/bin/python" ]; then PYTHON=$here/../../.venv/bin/python
else PYTHON=python3
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$dest"
[ -n "$(ls /var/lib/apt/lists/ 2>/dev/null | grep -v lock)" ] || apt-get update -qq

# fetch PKG VERSION: download and unpack one package into $work/PKG, print where it went.
fetch() {
  local pkg=$1 version=$2
  mkdir -p "$work/dl"
  if ! (cd "$work/dl" && apt-get download -qq "$pkg=$version" 2>/dev/null); then
    echo "warning: $pkg $version is no longer in the archive; taking the current version" >&2
    (cd "$work/dl" && apt-get download -qq "$pkg")
  fi
  dpkg-deb -x "$work/dl/${pkg}_"*.deb "$work/$pkg"
  echo "$pkg $(dpkg-deb -f "$work/dl/${pkg}_"*.deb Version)" >>"$work/versions"
  echo "$work/$pkg"
}

# pypi NAME VERSION: download one PyPI source distribution, unpack it into $work/NAME (its top
# folder stripped), print where it went. (Called as x=$(pypi ...): set -e does not reach inside a
# command substitution, so each step returns its failure itself.)
pypi() {
  local pkg=$1 version=$2
  mkdir -p "$work/pypi/$pkg" "$work/$pkg"
  "$PYTHON" -m pip download -q --no-deps --no-binary :all: -d "$work/pypi/$pkg" "$pkg==$version" >&2 || return
  tar xzf "$work/pypi/$pkg/"*.tar.gz -C "$work/$pkg" --strip-components=1 || return
  echo "$pkg $version (PyPI sdist)" >>"$work/versions"
  echo "$work/$pkg"
}

# debsrc PKG VERSION FILE SHA256: download Debian source package PKG=VERSION into $work/src/PKG
# (apt-get source --download-only, with a deb-src list of its own: the URI and base suite of the
# machine's configured Debian archive, its components, read with apt-get indextargets; apt's
# lists and caches for it live under $work, the system's are not touched), check that its FILE
# has SHA256, print FILE's path. No fallback to another version: the checksum pins the content.
debsrc() {
  local pkg=$1 version=$2 file=$3 sum=$4 a=$work/apt
  mkdir -p "$a/lists/partial" "$a/parts" "$a/cache" "$work/src/$pkg"
  apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' \
      'Identifier: Packages' 'Origin: Debian' 'Label: Debian' \
    | awk '$2 !~ /-/ && !seen[$0]++ { k = $1 " " $2; c[k] = (k in c) ? c[k] " " $3 : $3 }
           END { for (k in c) print "deb-src", k, c[k] }' | sort >"$a/sources.list"
  if [ ! -s "$a/sources.list" ]; then
    echo "error: no Debian archive among the machine's apt sources; cannot fetch $pkg's source" >&2
    return 1
  fi
  local opts=(-o "Dir::Etc::SourceList=$a/sources.list" -o "Dir::Etc::SourceParts=$a/parts"
              -o "Dir::State::Lists=$a/lists" -o "Dir::Cache=$a/cache" -o "APT::Sandbox::User=root")
  apt-get "${opts[@]}" update -qq >&2 || return
  (cd "$work/src/$pkg" && apt-get "${opts[@]}" source -qq --download-only "$pkg=$version" >&2) || {
    echo "error: source package $pkg $version is not in the archive (the sha256 pins it)" >&2; return 1; }
  echo "$sum  $work/src/$pkg/$file" | sha256sum -c --quiet - >&2 || return
  echo "$pkg $version (Debian source package)" >>"$work/versions"
  echo "$work/src/$pkg/$file"
}

# copy_tree FROM TO FIND-ARGS...: copy the files under FROM that `find . FIND-ARGS` lists to TO,
# keeping their relative paths.
copy_tree() {
  local from=$1 to=$2
  shift 2
  mkdir -p "$to"
  (cd "$from" && find . \( "$@" \) -type f -print0 | tar cf - --null -T -) | tar xf - -C "$to"
}

fresh() { rm -rf "$dest/$1" "$dest/_extra/$1"; mkdir -p "$dest/$1"; }

for set in "${sets[@]}"; do
  case $set in
  python_faq)  # Python 3.11 FAQ, Sphinx HTML (9 pages)
    x=$(fetch python3.11-doc 3.11.2-6+deb12u9); fresh $set
    cp -r "$x/usr/share/doc/python3.11/html/faq" "$dest/$set/faq" ;;
  python_faq_site)  # python_faq as its HTML build holds it: the pages with Sphinx's own files beside
    # them (_sources copies of the pages' reST, searchindex.js, objects.inv, the theme's _static)
    x=$(fetch python3.11-doc 3.11.2-6+deb12u9)/usr/share/doc/python3.11/html; fresh $set
    mkdir -p "$dest/$set/_sources"
    cp -r "$x/faq" "$x/searchindex.js" "$x/objects.inv" "$x/_static" "$dest/$set/"
    cp -r "$x/_sources/faq" "$dest/$set/_sources/"
    find "$dest/$set" -xtype l -delete ;;  # links to other packages' scripts (jquery.js)
  redis_commands)  # Redis command docs shipped with iredis, Markdown (372 files)
    x=$(fetch iredis 1.13.0-1); fresh $set
    cp -r "$x/usr/lib/python3/dist-packages/iredis/data/commands" "$dest/$set/commands"
    rm -f "$dest/$set/commands/__init__.py" ;;
  debian_faq)  # The Debian FAQ, DocBook XHTML, one page per chapter (17 pages)
    x=$(fetch debian-faq 11.1); fresh $set
    mkdir -p "$dest/$set/FAQ"
    cp "$x/usr/share/doc/debian/FAQ/"*.en.html "$dest/$set/FAQ/" ;;
  flex_manual)  # GNU flex manual, texinfo HTML, one page per node; its index pages kept apart
    x=$(fetch flex-doc 2.6.4-8.2); fresh $set
    mkdir -p "$dest/$set/html" "$dest/_extra/$set"
    cp "$x/usr/share/doc/flex-doc/html/"*.html "$dest/$set/html/"
    mv "$dest/$set/html/"{Concept-Index,Indices}.html "$dest/$set/html/"Index-of-*.html "$dest/_extra/$set/" ;;
  git_commands)  # Git manual pages as HTML (git-doc); fish's git completions for the queries
    x=$(fetch git-doc 1:2.39.5-0+deb12u3); fresh $set
    mkdir -p "$dest/$set/html" "$dest/_extra/$set"
    cp "$x/usr/share/doc/git-doc/"git*.html "$dest/$set/html/"
    y=$(fetch fish-common 3.6.0-3.1+deb12u1)
    cp "$y/usr/share/fish/completions/git.fish" "$dest/_extra/$set/" ;;
  git_asciidoc)  # the same manual pages' AsciiDoc sources (git-doc ships them as .txt), fragments too
    x=$(fetch git-doc 1:2.39.5-0+deb12u3); fresh $set
    mkdir -p "$dest/$set/txt"
    cp "$x/usr/share/doc/git-doc/"*.txt "$dest/$set/txt/" ;;
  pdf_docs)  # Six R manuals (single column) + six two-column LaTeX guides/templates; 213 MB download
    x=$(fetch r-doc-pdf 4.2.2.20221110-2); fresh $set
    mkdir -p "$dest/$set/r-manuals" "$dest/$set/articles"
    for m in R-FAQ R-admin R-data R-intro R-ints R-lang; do cp "$x/usr/share/R/doc/manual/$m.pdf" "$dest/$set/r-manuals/"; done
    y=$(fetch texlive-publishers-doc 2022.20230122-4)/usr/share/doc/texlive-doc/latex
    cp "$y/revtex/auguide/auguide4-2.pdf" "$y/mnras/mnras_guide.pdf" "$y/acmart/samples/sample-sigconf.pdf" \
       "$y/asmeconf/asmeconf-template.pdf" "$y/asmejour/asmejour-template.pdf" \
       "$y/quantumarticle/quantum-template.pdf" "$dest/$set/articles/" ;;
  pdf_tables)  # eight table-heavy LaTeX package manuals (symbol, unit, option and colour tables, 303
    # pages); a 720 MB download, nearly all of it texlive-latex-extra-doc for two of them
    r=$(fetch texlive-latex-recommended-doc 2022.20230122-3)/usr/share/doc/texlive-doc/latex
    s=$(fetch texlive-science-doc 2022.20230122-4)/usr/share/doc/texlive-doc/latex
    e=$(fetch texlive-latex-extra-doc 2022.20230122-4)/usr/share/doc/texlive-doc/latex
    fresh $set
    cp "$r/unicode-math/unimath-symbols.pdf" "$r/xcolor/xcolor.pdf" "$r/booktabs/booktabs.pdf" \
       "$s/siunits/SIunits.pdf" "$s/physics/physics.pdf" "$s/hepunits/hepunits.pdf" \
       "$e/cooking-units/cooking-units.pdf" "$e/mathfont/mathfont_symbol_list.pdf" "$dest/$set/" ;;
  notebooks)  # Jupyter notebooks (.ipynb, nbformat JSON as their projects keep them, outputs
    # included) from four PyPI sdists: nbsphinx 0.9.5's documentation (doc/**/*.ipynb, 31) under
    # nbsphinx/, IPython 8.18.1's examples (examples/**/*.ipynb, 22) under ipython/, xarray
    # 2024.6.0's gallery (doc/examples/*.ipynb, 9) under xarray/ and emcee 3.1.6's tutorials
    # (docs/tutorials/*.ipynb, 6) under emcee/; checkpoint copies left out
    x=$(pypi nbsphinx 0.9.5); y=$(pypi ipython 8.18.1); z=$(pypi xarray 2024.6.0); w=$(pypi emcee 3.1.6)
    fresh $set
    copy_tree "$x/doc" "$dest/$set/nbsphinx" -name '*.ipynb' ! -path '*/.ipynb_checkpoints/*'
    copy_tree "$y/examples" "$dest/$set/ipython" -name '*.ipynb' ! -path '*/.ipynb_checkpoints/*'
    copy_tree "$z/doc/examples" "$dest/$set/xarray" -name '*.ipynb' ! -path '*/.ipynb_checkpoints/*'
    copy_tree "$w/docs/tutorials" "$dest/$set/emcee" -name '*.ipynb' ! -path '*/.ipynb_checkpoints/*' ;;
  pdf_scanned)  # pdf_docs rasterised (every page an image): OCR, reading order and headings of scans
    [ -d "$dest/pdf_docs/r-manuals" ] || "$0" "$dest" pdf_docs >/dev/null
    fresh $set
    "$PYTHON" "$here/gen_pdf_scanned.py" "$dest/pdf_docs" "$dest/$set" ;;
  mail_ham)  # SpamAssassin easy_ham: 2,403 real list messages of 2002 (jwz's threading test data)
    x=$(fetch golang-github-gatherstars-com-jwz-dev 1.3.0-3); fresh $set
    cp -r "$x/usr/share/gocode/src/github.com/gatherstars-com/jwz/test/testdata/ham" "$dest/$set/ham" ;;
  man_pages)  # Manual pages (roff, gzip-compressed as shipped) of 19 command-line packages; fish's words
    fresh $set
    mkdir -p "$dest/_extra/$set"
    for pv in coreutils=9.1-1 findutils=4.9.0-4 grep=3.8-5 sed=4.9-1+deb12u1 tar=1.34+dfsg-1.2+deb12u1 \
              gzip=1.12-1 diffutils=1:3.8-4 util-linux=2.38.1-5+deb12u3 mount=2.38.1-5+deb12u3 \
              procps=2:4.0.2-3 openssh-client=1:9.2p1-2+deb12u10 rsync=3.5.0+ds1-0+deb12u1 \
              curl=7.88.1-10+deb12u15 wget=1.21.3-1+deb12u1 less=590-2.1~deb12u2 file=1:5.44-3 \
              iproute2=6.1.0-3 bzip2=1.0.8-5+b1 xz-utils=5.4.1-1+deb12u2; do
      x=$(fetch "${pv%%=*}" "${pv#*=}")
      # English pages only (translations live in usr/share/man/<lang>/), regular files only:
      # an alias page is a symlink to the page it names
      for d in "$x"/usr/share/man/man*; do
        [ -d "$d" ] || continue
        mkdir -p "$dest/$set/$(basename "$d")"
        find "$d" -maxdepth 1 -type f -exec cp {} "$dest/$set/$(basename "$d")/" \;
      done
    done
    y=$(fetch fish-common 3.6.0-3.1+deb12u1)
    cp -r "$y/usr/share/fish/completions" "$dest/_extra/$set/" ;;
  docbook_faq)  # DocBook XSL's rendering of a qandaset (question/answer table rows): Valgrind's FAQ
    # in its whole HTML manual, and GTK 3's "Common Questions" among the reference's overview pages
    x=$(fetch valgrind 1:3.19.0-1); fresh $set
    mkdir -p "$dest/$set/valgrind" "$dest/$set/gtk3"
    cp "$x/usr/share/doc/valgrind/html/"*.html "$dest/$set/valgrind/"
    y=$(fetch libgtk-3-doc 3.24.38-2~deb12u3)/usr/share/gtk-doc/html/gtk3
    # the overview pages (the API reference, one page per class, is left out: 370 pages of
    # signatures) and never the API index, a list of every symbol
    find "$y" -maxdepth 1 -name '*.html' ! -name 'Gtk*' ! -name 'gtk3-Gtk*' ! -name 'api-index-*' \
      -exec cp {} "$dest/$set/gtk3/" \; ;;
  info_manuals)  # GNU info manuals (.info.gz as shipped; findutils' split into find.info-1/-2)
    fresh $set
    for pv in sed=4.9-1 grep=3.8-5 diffutils=1:3.8-4 wget=1.21.3-1+deb12u1 gzip=1.12-1 time=1.9-0.2 \
              libtasn1-doc=4.19.0-2+deb12u1 findutils=4.9.0-4 bc=1.07.1-3+b1 ed=1.19-1 bzip2-doc=1.0.8-5; do
      x=$(fetch "${pv%%=*}" "${pv#*=}")
      find "$x/usr/share/info" -maxdepth 1 -name '*.info*' -type f -exec cp {} "$dest/$set/" \;
    done ;;
  glib_api)  # GLib 2.74's API reference, gtk-doc HTML (100 pages, its symbol indexes included)
    x=$(fetch libglib2.0-doc 2.74.6-2+deb12u9); fresh $set
    cp "$x/usr/share/gtk-doc/html/glib/"*.html "$dest/$set/" ;;
  sphinx_rst)  # Sphinx 7.2.6's own documentation, reStructuredText sources (doc/**/*.rst, 92 files);
    # its CHANGES file and the sphinx.ext modules' sources (docstrings) for the queries
    x=$(pypi sphinx 7.2.6); fresh $set
    copy_tree "$x/doc" "$dest/$set" -name '*.rst'
    mkdir -p "$dest/_extra/$set"
    cp "$x/CHANGES" "$dest/_extra/$set/"
    copy_tree "$x" "$dest/_extra/$set" \( -path './sphinx/ext/*.py' ! -path './sphinx/ext/*/*' \) \
      -o -path './sphinx/ext/*/__init__.py' ;;
  mkdocs_md)  # two MkDocs sites' Markdown sources (82 files): pymdown-extensions 10.8.1's docs
    # (docs/src/markdown without the hidden .snippets/ include folder) under pymdownx/ and
    # Python-Markdown 3.6's docs/ under markdown/; the extensions' sources for the queries
    x=$(pypi pymdown-extensions 10.8.1); y=$(pypi markdown 3.6); fresh $set
    copy_tree "$x/docs/src/markdown" "$dest/$set/pymdownx" -name '*.md' ! -path './.snippets/*'
    copy_tree "$y/docs" "$dest/$set/markdown" -name '*.md'
    copy_tree "$x" "$dest/_extra/$set" -path './pymdownx/*.py' ! -path './pymdownx/*/*'
    copy_tree "$y" "$dest/_extra/$set" -path './markdown/extensions/*.py' ;;
  mail_lkml)  # notmuch's test corpora: 228 real list messages of 2009-2011 (linux-kernel,
    # linux-cifs, alsa-devel, linux-fsdevel, notmuch...), in the Debian *source* package only.
    # One .eml per Message-ID (a message cross-posted to two lists arrived twice: the first copy
    # in path order is kept), numbered in the sorted order of the original paths:
    # lkml/NNN.eml from test/corpora/lkml/cur/, default/NNN.eml from test/corpora/default/**.
    x=$(debsrc notmuch 0.37-1 notmuch_0.37.orig.tar.xz \
        0e766df28b78bf4eb8235626ab1f52f04f1e366649325a8ce8d3c908602786f6); fresh $set
    mkdir -p "$work/notmuch"
    tar xJf "$x" -C "$work/notmuch" --strip-components=1 \
        notmuch-0.37/test/corpora/lkml notmuch-0.37/test/corpora/default
    "$PYTHON" - "$work/notmuch/test/corpora" "$dest/$set" <<'EOF'
import email, re, sys
from pathlib import Path
src, out = Path(sys.argv[1]), Path(sys.argv[2])
seen = set()
for sub in ("lkml", "default"):
    (out / sub).mkdir(parents=True, exist_ok=True)
    n = 0
    for path in sorted(p for p in (src / sub).rglob("*") if p.is_file()):
        data = path.read_bytes()
        mid = re.findall(r"<[^<>\s]+>", str(email.message_from_bytes(data).get("Message-Id") or ""))
        if mid and mid[0] in seen:
            continue
        seen.update(mid[:1])
        (out / sub / f"{n:03d}.eml").write_bytes(data)
        n += 1
EOF
    ;;
  text_docs)  # plain-text documentation as /usr/share/doc keeps it (gzip-compressed where Debian
    # ships it so): 8 FAQs under faq/ (docutils' FAQ.txt, reST, from its PyPI sdist), 20 Vim help
    # files under vimhelp/, 21 READMEs, NEWS files and notes under text/; each named <package>-<file>
    fresh $set
    mkdir -p "$dest/$set/faq" "$dest/$set/vimhelp" "$dest/$set/text"
    # put DOC NAME DIR FILE...: copy each FILE of $x/usr/share/doc/DOC (FILE.gz where Debian ships
    # it compressed, kept so) to DIR/NAME-FILE[.gz]
    put() {
      local d=$x/usr/share/doc/$1 name=$2 dir=$3 f
      shift 3
      for f in "$@"; do
        if [ -f "$d/$f" ]; then cp "$d/$f" "$dest/$set/$dir/$name-$f"; else cp "$d/$f.gz" "$dest/$set/$dir/$name-$f.gz"; fi
      done
    }
    x=$(fetch procmail 3.22-27);          put procmail procmail faq FAQ; put procmail procmail text KNOWN_BUGS QuickStart README
    x=$(fetch screen 4.9.0-4);            put screen screen faq FAQ; put screen screen text README
    x=$(fetch mc-data 3:4.8.29-2);        put mc-data mc faq FAQ; put mc-data mc text HACKING
    x=$(fetch slrn 1.0.3+dfsg-6+b1);      put slrn slrn faq FAQ; put slrn slrn text FIRST_STEPS README.multiuser score.txt
    x=$(fetch tcsh 6.24.07-1);            put tcsh tcsh faq FAQ; put tcsh tcsh text csh-whynot
    x=$(fetch xterm 379-1);               cp "$x/usr/share/doc/xterm/xterm.faq.gz" "$dest/$set/faq/"; put xterm xterm text README.i18n
    x=$(fetch sed 4.9-1+deb12u1);         cp "$x/usr/share/doc/sed/sedfaq.txt.gz" "$dest/$set/faq/"
    x=$(pypi docutils 0.21.2);            cp "$x/FAQ.txt" "$dest/$set/faq/docutils-FAQ.txt"
    x=$(fetch bash 5.2.15-2+b13);         put bash bash text COMPAT INTRO POSIX RBASH
    x=$(fetch fetchmail 6.4.37-1);        put fetchmail fetchmail text README.SSL
    x=$(fetch gzip 1.12-1);               put gzip gzip text NEWS
    x=$(fetch less 590-2.1~deb12u2);      put less less text README.Debian
    x=$(fetch mutt 2.2.12-0.1~deb12u2);   put mutt mutt text NEWS PGP-Notes.txt README.SMIME
    x=$(fetch sudo 1.9.13p3-1+deb12u4);   put sudo sudo text OPTIONS
    x=$(fetch vim-runtime 2:9.0.1378-2+deb12u2)
    for f in debugger diff fold helphelp motion pi_paren pi_tar quotes recover scroll sign tabpage \
             textprop tips undo usr_08 usr_10 usr_22 usr_27 visual; do
      cp "$x/usr/share/vim/vim90/doc/$f.txt" "$dest/$set/vimhelp/"
    done ;;
  perl_pod)  # Perl 5.36's documentation as POD sources (pod/*.pod as perl-doc installs them, read
    # as-is): 58 pages of the user-level manual (perl.pod's overview, tutorials, reference, FAQ
    # and Unicode sections, picked by hand: no perl5*delta, platform, internals or API pages,
    # none of the generated lists such as perltoc, perldiag or perluniprops)
    x=$(fetch perl-doc 5.36.0-7+deb12u4)/usr/share/perl/5.36.0/pod; fresh $set
    for p in perlcheat perldata perldebtut perldebug perldsc perlfaq perlfaq1 perlfaq2 perlfaq3 perlfaq4 \
             perlfaq5 perlfaq6 perlfaq7 perlfaq8 perlfaq9 perlfork perlform perlfunc perlglossary perlintro \
             perlipc perllocale perllol perlmod perlmodinstall perlmodlib perlnewmod perlnumber perlobj \
             perlootut perlop perlopentut perlpacktut perlperf perlpod perlport perlre perlrebackslash \
             perlrecharclass perlref perlreftut perlrequick perlreref perlretut perlrun perlsec perlstyle \
             perlsub perlsyn perlthrtut perltie perltrap perlunicode perlunicook perlunifaq perluniintro \
             perlunitut perlvar; do
      cp "$x/$p.pod" "$dest/$set/"
    done ;;
  pg_sql)  # PostgreSQL 15's SQL command reference, DocBook XSL HTML, one page per command
    # (sql-*.html, 140 pages): the DROP pages, the command list (sql-commands.html, every
    # command's one-line summary, which the queries rewrite) and the syntax chapters left out
    x=$(fetch postgresql-doc-15 15.20-0+deb12u1)/usr/share/doc/postgresql-doc-15/html; fresh $set
    find "$x" -maxdepth 1 -type f -name 'sql-*.html' ! -name 'sql-drop*' ! -name 'sql-commands.html' \
      ! -name 'sql-syntax*' ! -name 'sql-expressions.html' ! -name 'sql-keywords-appendix.html' \
      -exec cp {} "$dest/$set/" \; ;;
  *) echo "unknown set: $set" >&2; exit 2 ;;
  esac
  echo "$set: $(find "$dest/$set" -type f | wc -l) files -> $dest/$set"
done
if [ -f "$work/versions" ]; then echo "packages:"; sed "s/^/  /" "$work/versions"; fi
