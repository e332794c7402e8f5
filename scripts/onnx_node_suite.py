#!/usr/bin/env python3
"""Writes ONNX's node conformance tests, as `d5 onnx-test` reads them, from the
test-case generators of an installed onnx Python package.

ONNX releases up to 1.20 ship these tests as files (onnx/backend/test/data/node,
Debian's libonnx-testdata holds those of 1.12); later ones build them in memory
from onnx/backend/test/case/node/*.py. This script collects those cases and
writes each as a folder (model.onnx, test_data_set_0/input_K.pb, output_K.pb)
with onnx's own writer, one case at a time, so that one generator that fails
on this machine's numpy costs its own tests only: the failures are listed on
standard error and in OUT/generation_failures.json.

    python3 scripts/onnx_node_suite.py OUT        # then: d5 onnx-test OUT/node

It needs the onnx package of the release to check against (and its
ml_dtypes), e.g. in a virtual environment; Debian 12's python3-onnx is 1.12,
whose data is already installed as libonnx-testdata. docs/level1.md says what
d5 passes of ONNX 1.23's suite.
"""
import argparse
import functools
import importlib
import json
import os
import pkgutil
import shutil
import sys
import traceback


def describe(error):
    frames = traceback.extract_tb(error.__traceback__)
    where = f" [{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}]" if frames else ""
    return f"{type(error).__name__}: {error}{where}".replace("\n", " ")[:500]


def guard_generators(failures):
    """Makes every export*() generator of the case classes catch its own
    exceptions, recording them, before the classes are created."""
    from onnx.backend.test.case import base

    register = base._Exporter.__init__

    def guarded(cls, name, bases, members):
        for key, value in list(members.items()):
            if not (key.startswith("export") and isinstance(value, staticmethod)):
                continue

            generator = value.__func__

            # wraps: onnx reads the generator's source through __wrapped__
            @functools.wraps(generator)
            def run(generator=generator, label=f"{name}.{key}"):
                try:
                    generator()
                except Exception as error:  # a generator this numpy cannot run
                    failures.append({"generator": label, "error": describe(error)})

            members[key] = staticmethod(run)
            setattr(cls, key, staticmethod(run))
        register(cls, name, bases, members)

    base._Exporter.__init__ = guarded


def import_all(package, failures):
    import onnx

    for _, name, is_package in pkgutil.iter_modules(package.__path__):
        module_name = f"{package.__name__}.{name}"
        if not onnx.ONNX_ML and ".ai_onnx_ml" in module_name:
            continue
        try:
            module = importlib.import_module(module_name)
        except Exception as error:
            failures.append({"module": module_name, "error": describe(error)})
            continue
        if is_package:
            import_all(module, failures)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="folder to write; its node/ subfolder is replaced")
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    import onnx

    failures = []
    guard_generators(failures)
    import onnx.backend.test.case.node as node_cases
    import onnx.backend.test.cmd_tools as cmd_tools

    import_all(node_cases, failures)
    cases = list(node_cases._NodeTestCases)
    node_dir = os.path.join(out, "node")
    shutil.rmtree(node_dir, ignore_errors=True)
    os.makedirs(node_dir)
    written = 0
    for case in cases:
        cmd_tools.model_test.collect_testcases = lambda one=case: [one]
        try:
            cmd_tools.generate_data(argparse.Namespace(output=out))
            written += 1
        except Exception as error:
            failures.append({"test": case.name, "error": describe(error)})
            shutil.rmtree(os.path.join(node_dir, case.name), ignore_errors=True)
    with open(os.path.join(out, "generation_failures.json"), "w") as f:
        json.dump({"onnx": onnx.__version__, "cases": len(cases), "written": written,
                   "failures": failures}, f, indent=1)
    print(f"onnx {onnx.__version__}: {written} of {len(cases)} node tests written to {node_dir}")
    for failure in failures:
        print(f"  not written: {failure}", file=sys.stderr)
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
