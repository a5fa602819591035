"""Authors told of their failures (issue 38): the notices a chat adapter takes and tells, as the author's preferences allow."""

from __future__ import annotations

from core.cases.base import CaseBase


class NoticeCases(CaseBase):
    """Authors told of their failures (issue 38): the notices a chat adapter takes and tells, as the author's preferences allow."""
