#!/usr/bin/env python3
"""Cross-module references between Python test modules resolve.

A test module that imports another (`import test_field_partitions as fp`,
`from iceberg_util import wait_rows`) fails only when the test using the
name runs, which for slow or conditional tests may be late in `make test`.
This check reads every module under the given directories with `ast` and
reports each `alias.name` or `from module import name` whose module is one
of them and whose name that module does not define at its top level.

Usage: check-test-refs.py DIR...   (exit 1 and one line per miss)
"""
import ast
import os
import sys


def top_level_names(tree):
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name):
                        names.add(sub.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, (ast.If, ast.Try)):
            # names bound under a top-level if/try (optional imports)
            inner = ast.Module(body=[n for n in ast.walk(node) if isinstance(n, ast.stmt)
                                     and n is not node], type_ignores=[])
            names |= top_level_names(inner)
    return names


class RefChecker(ast.NodeVisitor):
    """Walks one module keeping a stack of scopes, each mapping a local name
    to the test module it is bound to (None when it is bound to anything
    else, which hides an outer alias: `with open(f) as fp` after
    `import test_x as fp`)."""

    def __init__(self, mod, path, trees, defined, misses):
        self.path, self.trees, self.defined, self.misses = path, trees, defined, misses
        self.scopes = [{}]

    def lookup(self, name):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def miss(self, node, module, name):
        self.misses.append("%s:%d: %s does not define %s" % (self.path, node.lineno, module, name))

    def bind_targets(self, target):
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                self.scopes[-1][sub.id] = None

    def visit_function(self, node):
        scope = {}
        for sub in ast.walk(node):
            # a name assigned anywhere in the function is local to all of it
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                scope[sub.id] = None
        for arg in node.args.args + node.args.kwonlyargs:
            scope[arg.arg] = None
        self.scopes.append(scope)
        self.generic_visit(node)
        self.scopes.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_function

    def visit_Import(self, node):
        for a in node.names:
            self.scopes[-1][a.asname or a.name.split(".")[0]] = (
                a.name if a.name in self.trees else None)

    def visit_ImportFrom(self, node):
        for a in node.names:
            if node.module in self.trees and not node.level and a.name != "*":
                if a.name not in self.defined[node.module]:
                    self.miss(node, node.module, a.name)
            self.scopes[-1][a.asname or a.name] = None

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name):
            target = self.lookup(node.value.id)
            if target and node.attr not in self.defined[target]:
                self.miss(node, target, node.attr)
        self.generic_visit(node)


def main(dirs):
    paths = {}
    for d in dirs:
        for name in sorted(os.listdir(d)):
            if name.endswith(".py"):
                paths[name[:-3]] = os.path.join(d, name)
    trees = {mod: ast.parse(open(p, encoding="utf-8").read(), p) for mod, p in paths.items()}
    defined = {mod: top_level_names(t) for mod, t in trees.items()}
    misses = []
    for mod, tree in trees.items():
        RefChecker(mod, paths[mod], trees, defined, misses).visit(tree)
    for m in misses:
        print(m)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
