"""Mutation testing of the pure modules with mutmut 3 (not part of `make test`: minutes to hours).

    .venv/bin/python benchmarks/mutation.py                       # every pure module ([tool.mutmut])
    .venv/bin/python benchmarks/mutation.py "quotas.admission.preemption*"   # mutants matching a glob

mutmut copies the modules to ./mutants/, runs the pure suites (tests/quotas_engine,
tests/admission_engine, tests/inventory_domain, tests/metering_chargeback, without Django) against
each mutant and records which survive. This prints the kill rate and the survivors, to be recorded
(and each one killed by a test or explained) in
docs/benchmarks.md. Property tests run Hypothesis' "mutation" profile (25 derandomized examples, not
100): a mutant the hand-worked tests miss costs each property test's full run.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTMUT = str(Path(sys.executable).with_name("mutmut"))
# A line of `mutmut results --all true`: "    quotas.admission.preemption.x_find_victims__mutmut_12: survived"
RESULT = re.compile(r"^\s*(?P<name>\S+__mutmut_\d+): (?P<status>.+)$")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("patterns", nargs="*", help="mutant name globs (default: all)")
    parser.add_argument(
        "--examples",
        type=int,
        default=25,
        help="Hypothesis examples per property test (fewer: a quicker first pass whose survivors are a"
        " superset of the full run's)",
    )
    args = parser.parse_args()
    # The suites find ../shared from their own path, which under ./mutants/ is one level deeper.
    shared = os.environ.get("GPUPLATFORM_SHARED_DIR", str(ROOT.parent / "shared"))
    env = {**os.environ, "GPUPLATFORM_SHARED_DIR": shared}
    env.setdefault("HYPOTHESIS_PROFILE", "mutation")  # conftest.py: --examples per property test
    env["MUTATION_EXAMPLES"] = str(args.examples)
    run = subprocess.run([MUTMUT, "run", *args.patterns], cwd=ROOT, env=env, check=False)
    listed = subprocess.run(
        [MUTMUT, "results", "--all", "true"], cwd=ROOT, check=False, capture_output=True, text=True
    )
    results = {m["name"]: m["status"].strip() for m in map(RESULT.match, listed.stdout.splitlines()) if m}
    if args.patterns:
        keep = [re.compile(p.replace(".", r"\.").replace("*", ".*")) for p in args.patterns]
        results = {n: s for n, s in results.items() if any(k.match(n) for k in keep)}
    counts = Counter(results.values())
    tested = sum(n for status, n in counts.items() if status in ("killed", "survived", "timeout"))
    killed = counts["killed"] + counts["timeout"]
    print(f"\nmutants: {sum(counts.values())}  " + "  ".join(f"{s}: {n}" for s, n in sorted(counts.items())))
    if tested:
        print(f"kill rate: {killed}/{tested} = {100 * killed / tested:.1f}% (timeouts count as killed)")
    for name, status in sorted(results.items()):
        if status == "survived":
            print(f"survived: {name}   (show it: .venv/bin/mutmut show {name})")
    return run.returncode


if __name__ == "__main__":
    raise SystemExit(main())
