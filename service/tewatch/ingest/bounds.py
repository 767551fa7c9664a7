"""How much one upload may create. asv's params are a cartesian product: a few KB of parameter lists can
name tens of thousands of cases, each a row in several tables and, when it fails, an alert and a webhook
event. Uploads past these bounds are refused (413) before anything is expanded or written."""

from __future__ import annotations

from dataclasses import dataclass

from tewatch.ingest.errors import IngestError

RESULTS_SETTING = "TEWATCH_MAX_UPLOAD_RESULTS"
CASES_SETTING = "TEWATCH_MAX_UPLOAD_CASES"


@dataclass(frozen=True)
class UploadBounds:
    results: int = 50_000  # result rows: asv's parameter combinations plus the case records' metrics
    cases: int = 10_000  # distinct cases, whether named by the results or by case records

    def check_results(self, count: int, file: str, field: str, origin: str) -> None:
        if count > self.results:
            raise _refusal(
                f"this upload would store {count:,} results ({origin}); at most "
                f"{self.results:,} are accepted per upload ({RESULTS_SETTING})",
                file,
                field,
            )

    def check_cases(self, count: int, file: str, field: str | None, origin: str) -> None:
        if count > self.cases:
            raise _refusal(
                f"this upload names {count:,} cases ({origin}); at most "
                f"{self.cases:,} are accepted per upload ({CASES_SETTING})",
                file,
                field,
            )


UNBOUNDED = UploadBounds(results=2**62, cases=2**62)


def _refusal(message: str, file: str, field: str | None) -> IngestError:
    return IngestError(message, file=file, field=field, status_code=413)
