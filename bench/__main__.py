"""`make bench`: Herald against its peers (bench/peers.py, writes bench/RESULTS.md and
bench/staggered.png; the queue stacks BullMQ and Celery run in bench/rounds.py's
interleaved rounds, each skipped with its reason where its runtime or service is
missing), then the import benchmark, the command line's answer times
(bench/cli_speed.py), an urgent webhook behind a rate-limited import before and
after priorities (bench/priority.py), and the webhook burst with an event hook that is
down against the same burst without one (bench/hooks.py, 5 interleaved rounds), and
the null burst from schedules using a named template against plain text
(bench/template_burst.py, 5 interleaved rounds). Each prints what it measured."""

from __future__ import annotations

import json
import sys

from bench import cli_speed, hooks, import_bench, peers, priority, template_burst


def main() -> int:
    peers.main()
    print(json.dumps(import_bench.run(), indent=2))
    print(json.dumps(cli_speed.run(), indent=2))
    print(json.dumps(priority.run(), indent=2))
    hooks.main(["5"])
    template_burst.main(["5"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
