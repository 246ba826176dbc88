#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The kernel patch series of this repository, as `git format-patch` writes it.

    series.py write OUT          write the series and its cover letter to OUT
    series.py commits            make the series' commits and print them, one
                                 line each (commit, tree and subject), first
                                 first
    series.py check OUT TREE     write it, apply it with `git am` to a pristine
                                 tree, compare the result with TREE (the tree
                                 the tests build) and run checkpatch.pl --strict
                                 on every patch; one result line per check and
                                 `series: N passed, N failed` at the end
    series.py versions FILE DIR  write DIR/NNNN, the repository file FILE as it
                                 is after patch NNNN, for the patch that adds it
                                 and every patch that changes it; for a file of
                                 the kernel (FILE its path in the tree), DIR/0000
                                 is the pristine source's
    series.py carve FILE DIR     the reverse: make the patches' changes to FILE
                                 those between the versions in DIR (the first
                                 one the adding patch's or 0000, the last one
                                 the repository's file if it is one), dropping
                                 FILE's sections from the patches that have no
                                 version there

`versions` and `carve` are how a change to a file moves from one patch to
another: write the versions out, edit them, carve them back in.

The series is made from patches/ and the files this repository lays over the
kernel (lib.sh's mt_overlay): patch NNNN of the series is patches/NNNN-*.patch
(its text before the diff is the commit message, its diff the changes to the
kernel's files) plus the new files patches/series gives to NNNN. A file of the
repository may grow over several patches: the patch that adds it adds it as
it is before the later patches' diffs of it, which are taken back from the
repository's version (the final one, which prepare-tree.sh lays over the tree
the tests build). The
commits are built in a git repository of the pristine source
($MT_KCACHE/series/linux, made once from Debian's linux-source package), in
an index of their own, so the work tree stays pristine for `git am`.

Environment: MT_ROOT, MT_KCACHE, KERNEL_PKG, KERNEL_PKG_VERSION (lib.sh);
SIGNOFF, the "Name <email>" of From: and Signed-off-by: (default: the
repository's git identity, else the author of its last commit).

The repository's files name one identity as the maintainer of the subsystem
(the M: line of its MAINTAINERS entry, patch 0016) and as the author of its
modules. `write` puts SIGNOFF's identity in its place, so that a series sent
names its sender there too; `check` keeps the files as they are, since it
compares the series with the tree the tests built from them.
"""

import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.environ["MT_ROOT"]
KCACHE = os.environ["MT_KCACHE"]
BASE = os.path.join(KCACHE, "series", "linux")
PATCHES = os.path.join(ROOT, "patches")
MT_DIR = os.path.join(ROOT, "tools", "testing", "malloc_types")


class SeriesError(Exception):
    pass


def run(args, cwd=None, env=None, input=None, check=True, binary=False):
    p = subprocess.run(args, cwd=cwd, env=env, input=input, capture_output=True,
                       text=not binary)
    if check and p.returncode != 0:
        err = (p.stderr.strip() or p.stdout.strip()).splitlines()
        if binary:
            err = [e.decode(errors="replace") for e in err]
        raise SeriesError(f"{' '.join(args[:3])}: {err[-1] if err else 'exit ' + str(p.returncode)}")
    return p


def git(*args, env=None, input=None, check=True, cwd=BASE):
    return run(["git", "-C", cwd, *args], env=env, input=input, check=check).stdout.strip()


def identity():
    """The "Name <email>" of SIGNOFF, the repository's git identity or its last author."""
    who = os.environ.get("SIGNOFF", "").strip()
    if not who:
        p = run(["git", "-C", ROOT, "var", "GIT_COMMITTER_IDENT"], check=False)
        if p.returncode == 0 and run(["git", "-C", ROOT, "config", "user.email"], check=False).stdout.strip():
            who = re.sub(r"\s+\d+ [+-]\d{4}$", "", p.stdout.strip())
    if not who:
        p = run(["git", "-C", ROOT, "log", "-1", "--format=%an <%ae>"], check=False)
        who = p.stdout.strip()
    m = re.fullmatch(r"([^<>]+?)\s*<([^<>\s]+@[^<>\s]+)>", who)
    if not m:
        raise SeriesError(f"SIGNOFF must be 'Name <email>', not {who!r}")
    return m.group(1), m.group(2)


def files_identity():
    """The "Name <email>" the repository's files give as the subsystem's maintainer."""
    for p in sorted(os.listdir(PATCHES)):
        if not re.fullmatch(r"\d{4}-.+\.patch", p):
            continue
        with open(os.path.join(PATCHES, p)) as f:
            m = re.search(r"(?m)^\+MALLOC TYPES\n\+M:\t(.+)$", f.read())
        if m:
            return m.group(1).strip()
    raise SeriesError("no patch adds the MAINTAINERS entry MALLOC TYPES with an M: line")


def as_who(name, email, date=None):
    """The environment of a git command that authors and commits as `name <email>`, at `date`."""
    env = dict(os.environ, GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email, GIT_COMMITTER_NAME=name,
               GIT_COMMITTER_EMAIL=email)
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return env


def ensure_base():
    """The pristine source in git, tagged `pristine`, made once."""
    if os.path.isdir(os.path.join(BASE, ".git")) and \
            git("rev-parse", "-q", "--verify", "refs/tags/pristine", check=False):
        return
    pkg, ver = os.environ["KERNEL_PKG"], os.environ["KERNEL_PKG_VERSION"]
    deb = os.path.join(KCACHE, f"{pkg}_{ver}_all.deb")
    if not os.path.isfile(deb):
        raise SeriesError(f"{deb} is missing: run 'make setup'")
    print(f"series: making a git repository of the pristine {pkg} {ver} (once)", file=sys.stderr)
    shutil.rmtree(BASE, ignore_errors=True)
    os.makedirs(BASE)
    sh = (f"dpkg-deb --fsys-tarfile '{deb}' | tar -xO './usr/src/{pkg}.tar.xz' | "
          f"tar -xJ -C '{BASE}' --strip-components=1")
    run(["bash", "-o", "pipefail", "-c", sh])
    env = as_who("Debian", "debian-kernel@lists.debian.org", "2000-01-01T00:00:00Z")
    git("init", "-q")
    git("config", "core.autocrlf", "false")
    git("config", "gc.auto", "0")
    # Everything of the package, the files the kernel's .gitignore names too.
    git("add", "-A", "-f", ".")
    git("commit", "-q", "--no-verify", "-m", f"Linux {ver.split('-')[0]} ({pkg} {ver})", env=env)
    git("tag", "pristine")


def overlay():
    """{repository path: kernel path} of the files laid over the kernel."""
    out = run(["bash", "-c", f". '{MT_DIR}/lib.sh' && mt_overlay"]).stdout
    return dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)


def read_series(files):
    """The patches in order: [(number, path, message, has_diff, [(repo, kernel)])]."""
    patches = sorted(f for f in os.listdir(PATCHES) if re.fullmatch(r"\d{4}-.+\.patch", f))
    numbers = [p[:4] for p in patches]
    for n in sorted(set(numbers)):
        same = [p for p in patches if p.startswith(n)]
        if len(same) > 1:
            raise SeriesError(f"patches {' and '.join(same)} share the number {n}")
    adds = {n: [] for n in numbers}
    owner = {}
    with open(os.path.join(PATCHES, "series")) as f:
        for lineno, line in enumerate(f, 1):
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            n, globs = line[0], line[1:]
            if not re.fullmatch(r"\d{4}", n) or not globs:
                raise SeriesError(f"patches/series:{lineno}: want 'NUMBER FILES...', not {' '.join(line)!r}")
            if n not in adds:
                raise SeriesError(f"patches/series:{lineno}: no patch {n} in patches/")
            for g in globs:
                hits = sorted(r for r in files if fnmatch.fnmatchcase(r, g))
                if not hits:
                    raise SeriesError(f"patches/series:{lineno}: {g} names no file of the repository")
                for r in hits:
                    if r in owner:
                        raise SeriesError(f"{r} is added by both {owner[r]} and {n}")
                    owner[r] = n
                    adds[n].append((r, files[r]))
    orphans = sorted(set(files) - set(owner))
    if orphans:
        raise SeriesError(f"patches/series gives no patch to {', '.join(orphans)}")
    series = []
    for p, n in zip(patches, numbers):
        with open(os.path.join(PATCHES, p)) as f:
            text = f.read()
        m = re.search(r"(?m)^(--- |diff )", text)
        message = (text[:m.start()] if m else text).strip()
        lines = message.splitlines()
        if not message or not lines[0].strip():
            raise SeriesError(f"patches/{p} has no commit message")
        if len(lines) < 3 or lines[1].strip():
            raise SeriesError(f"patches/{p}: want a subject line, a blank line and a body")
        if len(lines[0]) > 75:
            raise SeriesError(f"patches/{p}: the subject is {len(lines[0])} characters, over 75")
        if re.search(r"(?mi)^\s*signed-off-by:", message):
            raise SeriesError(f"patches/{p}: Signed-off-by is the generator's (SIGNOFF), not the message's")
        series.append((n, p, message, m is not None, adds[n]))
    return series


def diff_sections(text):
    """[(kernel path, text)] of the file sections of a patch's diff, in order."""
    m = re.search(r"(?m)^--- \S+.*\n\+\+\+ ", text)
    if not m:
        return []
    parts = re.split(r"(?m)^(?=--- \S+.*\n\+\+\+ )", text[m.start():])
    out = []
    for part in parts:
        h = re.match(r"--- (\S+).*\n\+\+\+ (\S+)", part)
        if h:
            path = h.group(2) if h.group(2) != "/dev/null" else h.group(1)
            out.append((path.split("/", 1)[1] if "/" in path else path, part))
    return out


def file_sections(series):
    """{kernel path: [(number, patch, section)]}: every patch's change to each file, in
    series order."""
    changes = {}
    for n, p, _, has_diff, _ in series:
        if not has_diff:
            continue
        with open(os.path.join(PATCHES, p)) as f:
            for path, section in diff_sections(f.read()):
                changes.setdefault(path, []).append((n, p, section))
    return changes


def later_sections(series):
    """{kernel path: [(number, patch, section)]}: the changes that patches make to files of
    the repository that earlier patches add, in series order."""
    added = {kernel: (n, repo) for n, _, _, _, adds in series for repo, kernel in adds}
    changes = {}
    for path, sections in file_sections(series).items():
        if path not in added:
            continue
        first, repo = added[path]
        for n, p, _ in sections:
            if n <= first:
                raise SeriesError(f"patches/{p} changes {repo}, which patches/series has "
                                  f"{first} add")
        changes[path] = sections
    return changes


def taken_back(repo, kernel, sections):
    """The repository file `repo` (at kernel path `kernel`) with `sections`, the later
    patches' changes to it, taken back, last patch first."""
    with tempfile.TemporaryDirectory() as tmp:
        dst = os.path.join(tmp, kernel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(os.path.join(ROOT, repo), dst)
        for _, p, section in reversed(sections):
            r = run(["patch", "-d", tmp, "-p1", "-R", "-F0", "-s", "-f",
                     "--no-backup-if-mismatch", "-r", "-"], input=section, check=False)
            if r.returncode:
                why = (r.stdout.strip() or r.stderr.strip() or "?").splitlines()[-1]
                raise SeriesError(f"patches/{p}: its changes to {repo} are not in the "
                                  f"repository's version ({why})")
        with open(dst, "rb") as f:
            return f.read()


def first_versions(series):
    """{kernel path: bytes} of the repository's files that later patches change, as the
    patches that add them add them."""
    repos = {kernel: repo for _, _, _, _, adds in series for repo, kernel in adds}
    return {path: taken_back(repos[path], path, sections)
            for path, sections in later_sections(series).items()}


def patch_file(number):
    """The path under patches/ of patch `number`."""
    hits = [p for p in os.listdir(PATCHES) if p.startswith(number + "-") and p.endswith(".patch")]
    if len(hits) != 1:
        raise SeriesError(f"no single patches/{number}-*.patch")
    return os.path.join(PATCHES, hits[0])


def added_by(series, repo):
    """(number, kernel path) of the patch that adds the repository file `repo`."""
    for n, _, _, _, adds in series:
        for r, kernel in adds:
            if r == repo:
                return n, kernel
    raise SeriesError(f"{repo} is not a file that patches/series gives to a patch")


def locate(series, name):
    """(number, kernel path) of `name`: a repository file, added by patch `number`; or a
    file of the kernel, named by its path in the tree, with number 0000 (the pristine
    source)."""
    try:
        return added_by(series, name)
    except SeriesError:
        ensure_base()
        if run(["git", "-C", BASE, "cat-file", "-e", f"pristine:{name}"], check=False).returncode:
            raise SeriesError(f"{name} is neither a file that patches/series gives to a patch "
                              f"nor a file of the kernel")
        return "0000", name


def origin(series, name):
    """(number, kernel path, text, sections) of `name` (see `locate()`): the repository
    file as the patch `number` adds it, or the kernel's file as the pristine source has it,
    and the later patches' changes to it."""
    first, kernel = locate(series, name)
    if first == "0000":
        text = run(["git", "-C", BASE, "show", f"pristine:{name}"], binary=True).stdout
        return first, kernel, text, file_sections(series).get(kernel, [])
    sections = later_sections(series).get(kernel, [])
    return first, kernel, taken_back(name, kernel, sections), sections


def file_versions(name, series=None):
    """[(number, text)] of the file `name` (see `origin()`) as the patch that adds it adds
    it, or as the pristine source has it, and after every patch that changes it, in series
    order."""
    first, kernel, text, sections = origin(series or read_series(overlay()), name)
    versions = [(first, text.decode())]
    with tempfile.TemporaryDirectory() as tmp:
        dst = os.path.join(tmp, kernel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "wb") as f:
            f.write(text)
        for n, _, section in sections:
            run(["patch", "-d", tmp, "-p1", "-F0", "-s", "-f",
                 "--no-backup-if-mismatch", "-r", "-"], input=section)
            with open(dst) as g:
                versions.append((n, g.read()))
    return versions


def write_versions(versions, directory):
    """Writes `versions` ([(number, text)], see `file_versions()`) to `directory`/NNNN."""
    os.makedirs(directory, exist_ok=True)
    for n, text in versions:
        with open(os.path.join(directory, n), "w") as f:
            f.write(text)


def set_section(number, kernel, section):
    """Makes `section` (a unified diff of `kernel`, or "" for none) patch `number`'s change
    to that file: in place of the one it has, or among the others in path order."""
    path = patch_file(number)
    with open(path) as f:
        text = f.read()
    m = re.search(r"(?m)^(--- |diff )", text)
    head = text[:m.start()] if m else text.rstrip("\n") + "\n\n"
    sections = [(k, s) for k, s in diff_sections(text) if k != kernel]
    if section:
        at = next((i for i, (k, _) in enumerate(sections) if k > kernel), len(sections))
        sections.insert(at, (kernel, section))
    body = "".join(s for _, s in sections)
    with open(path, "w") as f:
        f.write(head + body if body else head.rstrip("\n") + "\n")


def carve(name, directory, keep=True):
    """Writes the changes between the versions of the file `name` (see `origin()`) in
    `directory` (files named by patch number) into the patches; see the module's doc.
    With `keep` false, every section is written anew, even where the change is the same."""
    series = read_series(overlay())
    first, kernel = locate(series, name)
    numbers = sorted(n for n in os.listdir(directory) if re.fullmatch(r"\d{4}", n))
    if not numbers or numbers[0] != first:
        raise SeriesError(f"{directory}: want {first}, the version of the patch that adds {name}"
                          f" (0000 for the pristine source's), first")
    known = {n for n, *_ in series}
    for n in numbers[1:] if first == "0000" else numbers:
        if n not in known:
            raise SeriesError(f"{directory}/{n}: no patch {n} in patches/")
    texts = []
    for n in numbers:
        with open(os.path.join(directory, n)) as f:
            texts.append(f.read())
    if first != "0000":
        with open(os.path.join(ROOT, name)) as f:
            if texts[-1] != f.read():
                raise SeriesError(f"{directory}/{numbers[-1]} is not the repository's {name}")
    # A patch whose change is the same as before keeps its section as it is. (With the
    # repository's file changed too, the old sections may no longer apply: none is kept.)
    old = []
    if keep:
        try:
            old = file_versions(name, series)
        except SeriesError:
            pass
    old_pairs = {n: (b, a) for (_, b), (n, a) in zip(old, old[1:])}
    new_pairs = {n: (b, a) for b, n, a in zip(texts, numbers[1:], texts[1:])}
    kept = {n for n in new_pairs if old_pairs.get(n) == new_pairs[n]}
    changes = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n, before, after in zip(numbers[1:], texts, texts[1:]):
            for label, text in (("a", before), ("b", after)):
                with open(os.path.join(tmp, label), "w") as f:
                    f.write(text)
            # diff(1), whose hunks are git's, not difflib's.
            changes[n] = run(["diff", "-U3", "--label", f"a/{kernel}", "--label", f"b/{kernel}",
                              os.path.join(tmp, "a"), os.path.join(tmp, "b")], check=False).stdout
    for n, *_ in series:
        if n > first and n not in kept:
            set_section(n, kernel, changes.get(n, ""))


def build(series, name, email, sender=None, ref="series"):
    """Commits the series on `pristine` in a private index, points branch `ref` at the last
    commit and returns it. With
    `sender`, a pair (the files' identity, the one to put in its place), every patch and file
    has the first replaced by the second."""
    date = git("log", "-1", "--format=%cI", cwd=ROOT) or "2026-01-01T00:00:00Z"
    env = as_who(name, email, date)
    first = first_versions(series)
    with tempfile.TemporaryDirectory() as tmp:
        env["GIT_INDEX_FILE"] = os.path.join(tmp, "index")
        git("read-tree", "pristine", env=env)
        parent = git("rev-parse", "pristine^{commit}")
        for n, p, message, has_diff, adds in series:
            if has_diff:
                with open(os.path.join(PATCHES, p)) as f:
                    diff = f.read()
                if sender:
                    diff = diff.replace(*sender)
                r = run(["git", "-C", BASE, "apply", "--cached", "--whitespace=nowarn", "-"],
                        env=env, input=diff, check=False)
                if r.returncode:
                    raise SeriesError(f"patches/{p} does not apply to the series before it: "
                                      f"{(r.stderr.strip().splitlines() or ['?'])[-1]}")
            for repo, kernel in adds:
                src = os.path.join(ROOT, repo)
                if kernel in first:
                    body = first[kernel]
                else:
                    with open(src, "rb") as f:
                        body = f.read()
                if sender:
                    body = body.replace(*(s.encode() for s in sender))
                sha = run(["git", "-C", BASE, "hash-object", "-w", "--stdin"], env=env,
                          input=body, binary=True).stdout.decode().strip()
                mode = "100755" if os.access(src, os.X_OK) else "100644"
                git("update-index", "--add", "--cacheinfo", f"{mode},{sha},{kernel}", env=env)
            tree = git("write-tree", env=env)
            if tree == git("rev-parse", f"{parent}^{{tree}}"):
                raise SeriesError(f"patches/{p} changes nothing: no diff, and patches/series "
                                  f"gives it no file")
            msg = f"{message}\n\nSigned-off-by: {name} <{email}>\n"
            parent = git("commit-tree", tree, "-p", parent, env=env, input=msg)
    git("update-ref", f"refs/heads/{ref}", parent)
    return parent


def cover_letter(out):
    """Fills the cover letter of format-patch with patches/cover-letter."""
    with open(os.path.join(PATCHES, "cover-letter")) as f:
        text = f.read().strip()
    subject, _, blurb = text.partition("\n")
    path = os.path.join(out, "0000-cover-letter.patch")
    with open(path) as f:
        cover = f.read()
    if "*** SUBJECT HERE ***" not in cover or "*** BLURB HERE ***" not in cover:
        raise SeriesError("git format-patch wrote a cover letter without its placeholders")
    ver = os.environ["KERNEL_PKG_VERSION"]
    blurb = blurb.strip() + f"\n\nThe series is against Linux {ver.split('-')[0]} as Debian " \
        f"ships it\n({os.environ['KERNEL_PKG']} {ver}, unmodified)."
    cover = cover.replace("*** SUBJECT HERE ***", subject.strip()).replace("*** BLURB HERE ***", blurb)
    with open(path, "w") as f:
        f.write(cover)


def write(out, as_sender=True):
    """Writes the series to `out`; with `as_sender`, in the name of SIGNOFF (see above)."""
    ensure_base()
    files = overlay()
    series = read_series(files)
    name, email = identity()
    sender = None
    if as_sender:
        placeholder, who = files_identity(), f"{name} <{email}>"
        if placeholder != who:
            sender = (placeholder, who)
    tip = build(series, name, email, sender)
    if os.path.isdir(out):
        for f in os.listdir(out):
            if f.endswith(".patch"):
                os.unlink(os.path.join(out, f))
    os.makedirs(out, exist_ok=True)
    # The cover letter's From: is the identity git format-patch runs with.
    env = as_who(name, email)
    git("format-patch", "-q", "--cover-letter", "--no-signature", "--zero-commit",
        "--subject-prefix=PATCH", "-o", os.path.abspath(out), f"pristine..{tip}", env=env)
    cover_letter(out)
    return series, tip


def tree_of(path):
    """The git tree of directory `path`: all files, ignored ones too, but for the state of
    prepare-tree.sh (.malloc-types) and Python's byte code caches (__pycache__)."""
    env = dict(os.environ, GIT_INDEX_FILE=os.path.join(KCACHE, "series", "tested.index"),
               GIT_WORK_TREE=path, GIT_DIR=os.path.join(BASE, ".git"))
    run(["git", "add", "-A", "-f", "--", ".", ":(exclude).malloc-types",
         ":(exclude,glob)**/__pycache__/**"], cwd=path, env=env)
    return run(["git", "write-tree"], cwd=path, env=env).stdout.strip()


def read_exceptions():
    """{(number, type, file or "-"): why} of patches/checkpatch-exceptions."""
    allowed = {}
    with open(os.path.join(PATCHES, "checkpatch-exceptions")) as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            m = re.fullmatch(r"(\d{4})\s+([A-Z_]+)\s+(\S+)\s+(\S.*)", line.strip())
            if not m:
                raise SeriesError(f"patches/checkpatch-exceptions:{lineno}: want 'NNNN TYPE FILE WHY'")
            allowed[m.group(1), m.group(2), m.group(3)] = m.group(4)
    return allowed


def checkpatch_messages(output):
    """[(level, type, file or "-", message)] of checkpatch --show-types output."""
    found = []
    for block in re.split(r"\n\s*\n", output):
        m = re.match(r"(ERROR|WARNING|CHECK):([A-Z_0-9]+): (.*)", block.strip())
        if m:
            where = re.search(r"^#\d+: FILE: ([^:\s]+):", block, re.M)
            found.append((m.group(1), m.group(2), where.group(1) if where else "-", m.group(3)))
    return found


def round_trip(series):
    """[(name, problem or None)]: `versions` and `carve` undo each other. Each file that
    two or more patches make or change (a repository file that later patches change, or a
    file of the kernel) is carved from its own versions into a copy of patches/, every
    section written anew, and its versions read back from the copy must be the same."""
    global PATCHES
    repos = {kernel: repo for _, _, _, _, adds in series for repo, kernel in adds}
    names = sorted(repos.get(kernel, kernel) for kernel, sections in file_sections(series).items()
                   if len(sections) >= (1 if kernel in repos else 2))
    out = []
    original = PATCHES
    with tempfile.TemporaryDirectory() as tmp:
        PATCHES = os.path.join(tmp, "patches")
        try:
            shutil.copytree(original, PATCHES)
            for name in names:
                try:
                    versions = file_versions(name, series)
                    d = os.path.join(tmp, "versions", name)
                    write_versions(versions, d)
                    carve(name, d, keep=False)
                    back = file_versions(name, series)
                    why = None if back == versions else \
                        f"read back as {' '.join(n for n, _ in back)}, different text"
                except SeriesError as e:
                    why = str(e)
                out.append((name, why))
        finally:
            PATCHES = original
    return out


def check(out, tested):
    results = []

    def result(ok, what):
        results.append(ok)
        print(f"series: {'ok' if ok else 'FAILED'}: {what}")

    try:
        series, tip = write(out, as_sender=False)
    except SeriesError as e:
        result(False, f"format-patch: {e}")
        return results
    files = sorted(f for f in os.listdir(out) if f.endswith(".patch"))
    result(len(files) == len(series) + 1,
           f"format-patch: {len(series)} patches and a cover letter in {out}")

    # git am, on the pristine work tree.
    git("checkout", "-q", "-f", "--detach", "pristine")
    git("clean", "-q", "-f", "-d", "-x")
    git("am", "--abort", check=False)
    patches = [os.path.join(os.path.abspath(out), f) for f in files if not f.startswith("0000-")]
    name, email = identity()
    env = as_who(name, email)
    r = run(["git", "-C", BASE, "am", "-q", "--whitespace=error-all", *patches], env=env, check=False)
    if r.returncode:
        why = (r.stderr.strip() or r.stdout.strip() or "?").splitlines()
        result(False, f"git am: {why[0]}; {why[-1]}")
        git("am", "--abort", check=False)
        return results
    applied = git("rev-parse", "HEAD^{tree}")
    result(True, f"git am: {len(patches)} patches apply to the pristine tree")
    result(applied == git("rev-parse", f"{tip}^{{tree}}"), "git am gives the tree the series was made from")

    # The result equals the tree the tests build.
    if os.path.isdir(tested):
        have = tree_of(tested)
        if have == applied:
            result(True, f"the series gives exactly the tested tree {tested}")
        else:
            diff = git("diff", "--stat=100", applied, have, check=False).splitlines()
            result(False, f"the series differs from the tested tree: {'; '.join(diff[-6:])}")
    else:
        result(False, f"no tested tree at {tested}")

    # versions and carve, the tools that move changes between patches.
    trips = round_trip(series)
    bad = [f"{name}: {why}" for name, why in trips if why]
    result(not bad, f"versions and carve undo each other for the {len(trips)} files that several "
           f"patches change" + (": " + "; ".join(bad[:4]) if bad else ""))

    # checkpatch --strict, in the tree the series makes. Its SPDX check runs
    # scripts/spdxcheck.py with the first python3 on PATH, which needs ply
    # and GitPython: Debian's python3-ply and python3-git (setup.sh).
    allowed = read_exceptions()
    env = dict(os.environ, PATH="/usr/bin:" + os.environ.get("PATH", ""))
    for f in files:
        if f.startswith("0000-"):
            continue
        n = f[:4]
        r = run(["perl", "scripts/checkpatch.pl", "--strict", "--show-types", "--no-summary",
                 "--color=never", os.path.join(os.path.abspath(out), f)], cwd=BASE, env=env, check=False)
        found = checkpatch_messages(r.stdout)
        bad, known = [], set()
        for level, kind, path, msg in found:
            why = allowed.get((n, kind, path)) or allowed.get((n, kind, "-"))
            if why:
                known.add(kind)
            else:
                bad.append(f"{level}:{kind}: {path}: {msg}")
        note = f" ({', '.join(sorted(known))}: false positives, patches/checkpatch-exceptions)" \
            if known else ""
        if bad:
            result(False, f"checkpatch --strict {f}: " + "; ".join(bad[:8]))
        elif r.returncode not in (0, 1) or (r.returncode and not found) or "Traceback" in r.stderr:
            result(False, f"checkpatch {f}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
        else:
            result(True, f"checkpatch --strict {f}: clean{note}")
    return results


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "write":
        try:
            series, _ = write(sys.argv[2])
        except SeriesError as e:
            sys.exit(f"series: {e}")
        print(f"series: {len(series)} patches and a cover letter in {sys.argv[2]}")
    elif len(sys.argv) == 2 and sys.argv[1] == "commits":
        try:
            ensure_base()
            name, email = identity()
            tip = build(read_series(overlay()), name, email, ref="series-build")
        except SeriesError as e:
            sys.exit(f"series: {e}")
        print(git("log", "--reverse", "--format=%H %T %s", f"pristine..{tip}"))
    elif len(sys.argv) == 4 and sys.argv[1] == "versions":
        try:
            versions = file_versions(sys.argv[2])
        except SeriesError as e:
            sys.exit(f"series: {e}")
        write_versions(versions, sys.argv[3])
        print(" ".join(n for n, _ in versions))
    elif len(sys.argv) == 4 and sys.argv[1] == "carve":
        try:
            carve(sys.argv[2], sys.argv[3])
        except SeriesError as e:
            sys.exit(f"series: {e}")
    elif len(sys.argv) == 4 and sys.argv[1] == "check":
        try:
            results = check(sys.argv[2], sys.argv[3])
        except SeriesError as e:
            print(f"series: FAILED: {e}")
            results = [False]
        print(f"series: {sum(results)} passed, {len(results) - sum(results)} failed")
        sys.exit(0 if all(results) else 1)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
