"""Run every benchmark and print one JSON object per benchmark."""

from __future__ import annotations

import json
import sys

from bench import import_bench


def main() -> int:
    print(json.dumps(import_bench.run(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
