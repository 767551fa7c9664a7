"""Tables of bisections: what `tewatch bisect` was asked, where it stands, what it found, and each
measured (or skipped) commit with its verdict and evidence; linked to the alert or change point it
started from."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from tewatch.store.schema.models import Base, utcnow


class Bisection(Base):
    __tablename__ = "bisections"
    __table_args__ = (UniqueConstraint("repo", "good_sha", "bad_sha", "judge", "selection"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repo: Mapped[str] = mapped_column(String(200))
    good_sha: Mapped[str] = mapped_column(String(64))
    bad_sha: Mapped[str] = mapped_column(String(64))
    judge: Mapped[str] = mapped_column(String(32))
    selection: Mapped[str] = mapped_column(String(500))
    status: Mapped[str] = mapped_column(String(32))
    message: Mapped[str] = mapped_column(Text, default="")
    commits: Mapped[int] = mapped_column(Integer)  # in the range, endpoints included
    culprit_sha: Mapped[str | None] = mapped_column(String(64))
    culprit_subject: Mapped[str] = mapped_column(String(500), default="")
    candidates: Mapped[list] = mapped_column(JSON, default=list)  # the smallest range skips allow
    endpoints: Mapped[dict] = mapped_column(JSON, default=dict)  # how the endpoints differ
    alert_id: Mapped[int | None] = mapped_column(ForeignKey("alerts.id", ondelete="SET NULL"), index=True)
    detection_id: Mapped[int | None] = mapped_column(
        ForeignKey("detections.id", ondelete="SET NULL"), index=True
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)
    steps: Mapped[list[BisectionStep]] = relationship(
        back_populates="bisection", order_by="BisectionStep.position", cascade="all, delete-orphan"
    )


class BisectionStep(Base):
    __tablename__ = "bisection_steps"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    bisection_id: Mapped[int] = mapped_column(ForeignKey("bisections.id", ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer)  # the commit's place in the range: 0 is the good endpoint
    sha: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(500), default="")
    verdict: Mapped[str] = mapped_column(String(16))
    evidence: Mapped[dict] = mapped_column(JSON, default=dict)
    skip_reason: Mapped[str] = mapped_column(Text, default="")
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    bisection: Mapped[Bisection] = relationship(back_populates="steps")
