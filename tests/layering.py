#!/usr/bin/env python3
"""Check every include and every library link against the layer table.

The table is sim/layers.txt: the layers bottom first, each with its folder
and the layers it may use. This script reads the sources of each layer's
folder and of tests/<layer>/, and the CMake files of sim/ and hw/,
and reports as file:line each of:
  - an `#include "X/..."` of a layer X its file's layer may not use;
  - a layer library (sim/ and hw/'s CMake files) linking a
    layer it may not use;
  - a layer library including a layer's headers that it does not link (an
    undeclared use), or including one from its own headers that it links
    PRIVATE only (its users would not get it);
  - an include spelled from the repository root ("sim/gpu/..."): layers are
    included by their layer name.
Exit status 1 when there is any, 0 otherwise.

  python3 tests/layering.py [--root DIR]   check the tree at DIR (default: this repository)
  python3 tests/layering.py --self-test    plant upward uses in a scratch copy, require each reported
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

SOURCE_EXT = (".cpp", ".hpp", ".h", ".cc", ".cu", ".cuh")
HEADER_EXT = (".hpp", ".h", ".cuh")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
TABLE = "sim/layers.txt"


class Layer:
    def __init__(self, name, folder, uses, line):
        self.name, self.folder, self.uses_spec, self.line = name, folder, uses, line
        self.allowed = set()


def read_table(root):
    layers = []
    with open(os.path.join(root, TABLE)) as f:
        for n, raw in enumerate(f, 1):
            text = raw.split("#", 1)[0].split()
            if not text:
                continue
            if len(text) < 3:
                sys.exit(f"{TABLE}:{n}: expected `layer folder may-use`, got {raw.strip()!r}")
            layers.append(Layer(text[0], text[1].rstrip("/"), text[2:], n))
    names = [l.name for l in layers]
    for i, l in enumerate(layers):
        if l.uses_spec == ["below"]:
            l.allowed = set(names[:i])
        elif l.uses_spec == ["-"]:
            l.allowed = set()
        else:
            for u in l.uses_spec:
                if u not in names[:i]:
                    sys.exit(f"{TABLE}:{l.line}: {l.name} may use {u!r}, which is not a layer listed before it")
            l.allowed = set(l.uses_spec)
    return layers


def rule(l):
    uses = ", ".join(sorted(l.allowed)) if l.allowed else "no other layer"
    return f"{TABLE}:{l.line}: {l.name} may use {uses}"


def source_files(root, folder):
    base = os.path.join(root, folder)
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for fn in sorted(filenames):
            if fn.endswith(SOURCE_EXT):
                yield os.path.relpath(os.path.join(dirpath, fn), root)


def includes(root, path):
    with open(os.path.join(root, path), errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE_RE.match(line)
            if m and "/" in m.group(1):
                yield n, m.group(1)


def strip_cmake_comments(text):
    # `#` to the end of the line outside quotes; offsets are kept (comments become spaces).
    out, quoted = [], False
    i = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            quoted = not quoted
        if c == "#" and not quoted:
            while i < len(text) and text[i] != "\n":
                out.append(" ")
                i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def cmake_links(root, layer_names):
    """{layer: [(dep, scope, file, line)]} for each layer library, from the CMake files of sim/ and hw/;
    {layer: the CMake file that makes its library}."""
    links, made_in, texts = {}, {}, []
    for top in ("sim", "hw"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            if "CMakeLists.txt" not in filenames:
                continue
            path = os.path.relpath(os.path.join(dirpath, "CMakeLists.txt"), root)
            with open(os.path.join(root, path)) as f:
                texts.append((path, strip_cmake_comments(f.read())))
    # The layer libraries: overlapsim_<layer> made by add_library or overlapsim_library (sim/CMakeLists.txt).
    targets = {}
    for path, text in texts:
        for m in re.finditer(r"\b(add_library\s*\(\s*overlapsim_|overlapsim_library\s*\(\s*)(\w+)", text):
            if m.group(2) in layer_names:
                targets[f"overlapsim_{m.group(2)}"] = m.group(2)
                links.setdefault(m.group(2), [])
                made_in[m.group(2)] = path
    for path, text in texts:
        for m in re.finditer(r"\b(target_link_libraries|overlapsim_library)\s*\(([^)]*)\)", text):
            args = [(a.group(0), m.start(2) + a.start()) for a in re.finditer(r"\S+", m.group(2))]
            if not args:
                continue
            if m.group(1) == "overlapsim_library":
                layer = args[0][0] if args[0][0] in layer_names else None
            else:
                layer = targets.get(args[0][0])
            if layer is None:
                continue
            scope = "PUBLIC" if m.group(1) == "target_link_libraries" else None
            for word, pos in args[1:]:
                if word in ("PUBLIC", "PRIVATE", "INTERFACE", "SOURCES"):
                    scope = word
                    continue
                if scope in (None, "SOURCES"):
                    continue
                dep = re.fullmatch(r"overlapsim(?:::|_)(\w+)", word)
                if dep and dep.group(1) in layer_names:
                    links.setdefault(layer, []).append((dep.group(1), scope, path, text.count("\n", 0, pos) + 1))
    return links, made_in


def check(root):
    layers = read_table(root)
    by_name = {l.name: l for l in layers}
    names = set(by_name)
    errors = []
    scanned = n_includes = 0
    # layer -> dep layer -> (path, line, from a header?) of its first include, for the link checks
    used = {}

    def scan(folder, layer, is_test):
        nonlocal scanned, n_includes
        for path in source_files(root, folder):
            owner = layer
            if not is_test:  # a nested layer's folder (none today) belongs to that layer
                owner = max((l for l in layers if (path + "/").startswith(l.folder + "/")), key=lambda l: len(l.folder))
            scanned += 1
            for n, inc in includes(root, path):
                first = inc.split("/", 1)[0]
                n_includes += 1
                if first == "sim":
                    errors.append(f"{path}:{n}: #include \"{inc}\": include a layer's header by its layer name (\"{inc[4:]}\")")
                    continue
                if first not in names or first == owner.name:
                    continue
                if first not in owner.allowed:
                    errors.append(f"{path}:{n}: #include \"{inc}\": {owner.name}{' test' if is_test else ''} may not use {first} ({rule(owner)})")
                elif not is_test:
                    header = path.endswith(HEADER_EXT)
                    seen = used.setdefault(owner.name, {}).get(first)
                    if seen is None or (header and not seen[2]):
                        used[owner.name][first] = (path, n, header)

    for l in layers:
        if os.path.isdir(os.path.join(root, l.folder)):
            scan(l.folder, l, False)
        if os.path.isdir(os.path.join(root, "tests", l.name)):
            scan(os.path.join("tests", l.name), l, True)

    links, made_in = cmake_links(root, names)
    n_links = 0
    for name, deps in sorted(links.items()):
        l = by_name[name]
        for dep, scope, path, n in deps:
            n_links += 1
            if dep != name and dep not in l.allowed:
                errors.append(f"{path}:{n}: overlapsim::{name} links overlapsim::{dep}: {name} may not use {dep} ({rule(l)})")
        declared = {}
        for dep, scope, path, n in deps:
            declared[dep] = "PUBLIC" if scope in ("PUBLIC", "INTERFACE") or declared.get(dep) == "PUBLIC" else scope
        where = made_in[name]
        for dep, (path, n, header) in sorted(used.get(name, {}).items()):
            if dep not in declared:
                errors.append(f"{path}:{n}: {name} uses {dep} but overlapsim::{name} does not link overlapsim::{dep} "
                              f"(declare it in {where})")
            elif header and declared[dep] != "PUBLIC":
                errors.append(f"{path}:{n}: {name}'s header uses {dep} but overlapsim::{name} links overlapsim::{dep} "
                              f"PRIVATE (make it PUBLIC in {where})")
    return errors, scanned, n_includes, n_links


def self_test():
    """Plant an upward include, an upward link and an upward test include in a scratch copy; each must be named."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory(prefix="layering-") as tmp:
        for part in ("sim", "hw", "tests", "validate/src", "validate/CMakeLists.txt"):
            src, dst = os.path.join(here, part), os.path.join(tmp, part)
            if os.path.isdir(src):
                shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.json", "*.gz", "*.yaml", "*.txt.gz"))
            elif os.path.exists(src):
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy(src, dst)
        clean, *_ = check(tmp)
        if clean:
            print("self-test: the unchanged copy already fails:\n  " + "\n  ".join(clean))
            return 1
        plants = [
            ("sim/core/units.cpp", '#include "gpu/params.hpp"\n', "core may not use gpu"),
            ("sim/core/CMakeLists.txt", "target_link_libraries(overlapsim_core PRIVATE overlapsim::gpu)\n", "overlapsim::core links overlapsim::gpu"),
            ("tests/schedule/test_builder.cpp", '#include "report/metrics.hpp"\n', "schedule test may not use report"),
            ("sim/fabric/transfers.cpp", '#include "sim/core/units.hpp"\n', "by its layer name"),
        ]
        for path, text, _ in plants:
            with open(os.path.join(tmp, path), "a") as f:
                f.write(text)
        errors, *_ = check(tmp)
        print("self-test: planted", len(plants), "uses against the table; the check reports:")
        for e in errors:
            print("  " + e)
        missing = [(p, want) for p, _, want in plants if not any(e.startswith(p + ":") and want in e for e in errors)]
        for p, want in missing:
            print(f"self-test: FAILED: nothing reported for {p} ({want})")
        if missing or len(errors) != len(plants):
            return 1
        print("self-test: passed (each planted use reported, nothing else)")
        return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    errors, files, incs, nlinks = check(a.root)
    for e in errors:
        print(e)
    if errors:
        print(f"layering: {len(errors)} uses against the layer table ({TABLE})")
        return 1
    print(f"layering: ok ({files} files, {incs} includes, {nlinks} links checked against {TABLE})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
