from typing import Annotated

from fastapi import APIRouter, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field, StringConstraints, ValidationError, field_validator
from starlette.concurrency import run_in_threadpool

from tewatch.api.alert_schemas import StoredText
from tewatch.api.errors import first_errors
from tewatch.api.schemas import BUSY, Responses
from tewatch.core.clock import from_epoch_seconds, future_commit_message, too_far_ahead
from tewatch.ingest.commit_graph import store_graph
from tewatch.store.engine.database import write_connection
from tewatch.web.deps import UploadScope, get_engine

router = APIRouter(tags=["catalog"])

REFUSED: Responses = {
    422: {
        "description": "not a graph (its first 20 errors and a count of the rest), or one that contradicts the "
        "stored graph",
        "content": {
            "application/json": {
                "schema": {
                    "anyOf": [
                        {"$ref": "#/components/schemas/HTTPValidationError"},
                        {"$ref": "#/components/schemas/ErrorAnswer"},
                    ]
                }
            }
        },
    }
}
Sha = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{4,64}$")]


class CommitGraphIn(BaseModel):
    repo: StoredText = Field(default="", max_length=200)
    # parents first (`git log --topo-order --reverse`): sha, committer time (epoch seconds), parents
    commits: list[tuple[Sha, Annotated[int, Field(ge=0, lt=32503680000)], list[Sha]]] = Field(
        max_length=2_000_000
    )

    @field_validator("commits")
    @classmethod
    def _each_commit_once_after_its_parents(cls, commits: list) -> list:
        position = {}
        for i, (sha, committed, _) in enumerate(commits):
            if sha in position:
                raise ValueError(f"commit {sha} is listed twice")
            committed_at = from_epoch_seconds(committed)
            if too_far_ahead(committed_at):
                raise ValueError(future_commit_message(sha, committed_at))
            position[sha] = i
        for i, (sha, _, parents) in enumerate(commits):
            later = [p for p in parents if position.get(p, -1) >= i]
            if later:
                raise ValueError(
                    f"commit {sha} comes before (or is) its parent {later[0]}: send parents first"
                )
        return commits


class CommitGraphOut(BaseModel):
    commits: int
    placed: int  # stored commits of the repository that took their place in the graph


@router.post(
    "/api/v1/commits/graph",
    response_model=CommitGraphOut,
    dependencies=[UploadScope],
    responses={**BUSY, **REFUSED},
    # the body is read and validated off the event loop (a graph lists up to 2,000,000 commits)
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": CommitGraphIn.model_json_schema()}},
        }
    },
)
async def post_commit_graph(request: Request) -> CommitGraphOut:
    """Order the repository's commits by this git graph instead of their dates (`tewatch commits`).
    Refused (422, nothing stored): a committer time more than an hour past the service's clock, a commit
    sent again with other parents, or one that closes a cycle with commits sent before."""
    body = await request.body()

    def store() -> tuple[int, int]:
        try:
            graph = CommitGraphIn.model_validate_json(body)
        except ValidationError as exc:
            raise RequestValidationError(first_errors(exc, ("body",))) from None
        with write_connection(get_engine(request)) as conn:
            return len(graph.commits), store_graph(conn, graph.repo, graph.commits)

    commits, placed = await run_in_threadpool(store)
    return CommitGraphOut(commits=commits, placed=placed)
