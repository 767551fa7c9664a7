from typing import Annotated

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field, StringConstraints, field_validator
from starlette.concurrency import run_in_threadpool

from tewatch.api.alert_schemas import StoredText
from tewatch.api.schemas import BUSY
from tewatch.ingest.commit_graph import store_graph
from tewatch.store.database import write_connection
from tewatch.web.deps import UploadScope, get_engine

router = APIRouter(tags=["catalog"])

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
        for i, (sha, _, _) in enumerate(commits):
            if sha in position:
                raise ValueError(f"commit {sha} is listed twice")
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
    responses=BUSY,
)
async def post_commit_graph(request: Request, body: CommitGraphIn) -> CommitGraphOut:
    """Order the repository's commits by this git graph instead of their dates (`tewatch commits`)."""

    def store() -> int:
        with write_connection(get_engine(request)) as conn:
            return store_graph(conn, body.repo, body.commits)

    return CommitGraphOut(commits=len(body.commits), placed=await run_in_threadpool(store))
