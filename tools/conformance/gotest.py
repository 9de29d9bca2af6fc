"""franz-go's kgo integration tests as the judge of the simulated cluster (issue 32, `make conformance`).

`go test -json` (test2json) events in, one outcome per test out (top-level tests and subtests, `Parent/child` as Go
names them): `pass`, `fail` or `skip`, with its seconds. Three commands:

    results RUN.jsonl             the outcomes, one `outcome name seconds` line each, sorted by name
    record RUN.jsonl OUT COMMAND  an expected list (OUT) from a run against real Kafka: COMMAND written at its top
    check EXPECTED RUN.jsonl [ACCEPTED] [--again AGAIN.jsonl]
                                  the rule: the tests that pass against the simulator are exactly those that pass
                                  against real Kafka of that release (every one of them passes, none passes only
                                  against the simulator); exit 1 with the differences otherwise. ACCEPTED
                                  names tests that may skip against the simulator (APIs it does not serve).
                                  AGAIN: a second run of the tests that failed, alone (see `again`)
    again EXPECTED RUN.jsonl [ACCEPTED]  the top-level tests to run a second time, alone, as a `go test -run`
                                  pattern (nothing printed: none): those that pass against Kafka and failed here,
                                  at most AGAIN_MAX of them. franz-go's tests bound their waits (10 s for a poll that
                                  follows 3 s of linger and quiet) and run in parallel against one simulated cluster
                                  while `make test` keeps nine brokers busy on two cores: a test that fails only
                                  under that load passes alone, and the check says so; one that fails twice fails it

A test with no closing event (the binary panicked or timed out inside it) counts as `fail`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

OUTCOMES = ("pass", "fail", "skip")
AGAIN_MAX = 5  # more failures than this are not the load: no second run


def outcomes(lines: list[str]) -> dict[str, tuple[str, float]]:
    """Each test's (outcome, seconds); lines that are not test2json events (the build's own output) are left out."""
    seen: dict[str, tuple[str, float]] = {}
    for line in lines:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        name = event.get("Test") if isinstance(event, dict) else None
        if not name:
            continue
        action = event.get("Action")
        if action == "run":
            seen.setdefault(name, ("fail", 0.0))
        elif action in OUTCOMES:
            seen[name] = (action, float(event.get("Elapsed") or 0.0))
    return seen


def read_run(path: str) -> dict[str, tuple[str, float]]:
    return outcomes(Path(path).read_text(encoding="utf-8", errors="replace").splitlines())


def read_expected(path: str) -> dict[str, str]:
    expected = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            outcome, name = line.split()[:2]
            expected[name] = outcome
    return expected


def summary(run: dict[str, tuple[str, float]]) -> str:
    counts = {o: sum(1 for got, _ in run.values() if got == o) for o in OUTCOMES}
    return ", ".join(f"{counts[o]} {o}" for o in OUTCOMES)


def read_accepted(path: str | None) -> set[str]:
    if path is None:
        return set()
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def differences(
    expected: dict[str, str], run: dict[str, tuple[str, float]], accepted: frozenset[str] = frozenset()
) -> list[str]:
    """The rule broken, one line per test: passes against Kafka but not here, or passes here only."""
    lines = []
    for name in sorted(set(expected) | set(run)):
        kafka = expected.get(name, "absent")
        sim = run.get(name, ("absent", 0.0))[0]
        if name in accepted and kafka == "pass" and sim == "skip":
            continue
        if (kafka == "pass") != (sim == "pass"):
            lines.append(f"{name}: {kafka} against Kafka, {sim} against the simulator")
    return lines


def failed_first_time(
    expected: dict[str, str], run: dict[str, tuple[str, float]], accepted: frozenset[str] = frozenset()
) -> list[str]:
    """The top-level tests of the broken rule that failed here (a subtest's failure names its test)."""
    names = set()
    for name in sorted(set(expected) | set(run)):
        if expected.get(name) == "pass" and run.get(name, ("absent", 0.0))[0] == "fail":
            names.add(name.split("/")[0])
    return sorted(names)


def main(argv: list[str]) -> int:
    command, args = argv[0], argv[1:]
    if command == "results":
        run = read_run(args[0])
        for name, (outcome, seconds) in sorted(run.items()):
            print(f"{outcome} {name} {seconds:.2f}")
        print(f"# {summary(run)}")
        return 0
    if command == "record":
        run = read_run(args[0])
        if not run:
            print(f"{args[0]}: no test ran", file=sys.stderr)
            return 1
        body = [f"# {args[2]}", f"# {summary(run)}"]
        body += [f"{outcome} {name}" for name, (outcome, _) in sorted(run.items())]
        Path(args[1]).write_text("\n".join(body) + "\n", encoding="utf-8")
        print(f"{args[1]}: {summary(run)}")
        return 0
    again_path = None
    if "--again" in args:
        i = args.index("--again")
        again_path, args = args[i + 1], args[:i] + args[i + 2 :]
    if command == "again":
        expected, run = read_expected(args[0]), read_run(args[1])
        names = failed_first_time(expected, run, frozenset(read_accepted(args[2] if len(args) > 2 else None)))
        if names and len(names) <= AGAIN_MAX:
            print("^(" + "|".join(names) + ")$")
        return 0
    if command == "check":
        expected, run = read_expected(args[0]), read_run(args[1])
        accepted = frozenset(read_accepted(args[2] if len(args) > 2 else None))
        print(
            f"{args[1]}: {summary(run)}; against Kafka ({args[0]}): "
            f"{sum(1 for o in expected.values() if o == 'pass')} pass"
        )
        if again_path is not None:
            again = read_run(again_path)
            for name in failed_first_time(expected, run, accepted):
                outcome, seconds = again.get(name, ("absent", 0.0))
                print(f"  {name}: failed under the load, {outcome} alone in {seconds:.1f} s ({again_path})")
            run = {**run, **again}
        broken = differences(expected, run, accepted)
        for line in broken:
            print(f"  {line}")
        return 1 if broken else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
