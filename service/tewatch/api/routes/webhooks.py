from fastapi import APIRouter, HTTPException, Request, Response, status
from sqlalchemy.orm import Session

from tewatch.alerts.redelivery import AlreadyQueued, NoSuchDelivery, TooManyRedeliveries, redeliver
from tewatch.alerts.subscriptions import (
    SubscriptionError,
    active_subscriptions,
    add_subscription,
    remove_subscription,
)
from tewatch.api.alert_schemas import DeliveryOut, SubscriptionIn, SubscriptionOut
from tewatch.api.schemas import BUSY, NOT_FOUND, ErrorAnswer
from tewatch.store.engine.database import write_session
from tewatch.store.reads import alert_queries as queries
from tewatch.store.schema.alert_models import DeliveryStatus
from tewatch.web.deps import AdminScope, get_engine, get_settings
from tewatch.web.params import OptionalQueryInt, PathInt

# Subscriptions hold secrets and URLs of private receivers: every route needs an admin token.
router = APIRouter(tags=["webhooks"], dependencies=[AdminScope])


@router.post(
    "/api/v1/webhooks",
    response_model=SubscriptionOut,
    status_code=status.HTTP_201_CREATED,
    responses={422: {}, **BUSY},
)
def create_subscription(request: Request, body: SubscriptionIn):
    """Subscribe a URL to event types (regression.detected, correctness.failed, pr.report). The secret
    signs every body (X-Tewatch-Signature-256) and is never shown again."""
    with write_session(get_engine(request)) as session:
        try:
            subscription = add_subscription(
                session,
                body.url,
                body.secret,
                body.event_types,
                body.description,
                allow_loopback=get_settings(request).webhook_allow_loopback,
            )
        except SubscriptionError as exc:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_ENTITY, str(exc)) from exc
        return SubscriptionOut.model_validate(subscription)


@router.get("/api/v1/webhooks", response_model=list[SubscriptionOut])
def list_subscriptions(request: Request):
    with Session(get_engine(request)) as session:
        return active_subscriptions(session)


@router.delete(
    "/api/v1/webhooks/{subscription_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={**NOT_FOUND, **BUSY},
)
def delete_subscription(request: Request, subscription_id: PathInt):
    with write_session(get_engine(request)) as session:
        try:
            remove_subscription(session, subscription_id)
        except SubscriptionError as exc:
            raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc)) from exc
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/api/v1/webhooks/deliveries", response_model=list[DeliveryOut])
def list_deliveries(
    request: Request,
    status: DeliveryStatus | None = None,
    subscription_id: OptionalQueryInt = None,
    limit: int = 200,
):
    """The delivery log, newest first."""
    with Session(get_engine(request)) as session:
        return queries.list_deliveries(session, status, subscription_id, min(max(limit, 1), 1000))


@router.post(
    "/api/v1/webhooks/deliveries/{delivery_id}/redeliver",
    response_model=DeliveryOut,
    responses={
        **NOT_FOUND,
        409: {"model": ErrorAnswer, "description": "the delivery is queued already"},
        429: {"model": ErrorAnswer, "description": "too many redeliveries to its subscription this minute"},
        **BUSY,
    },
)
def redeliver_delivery(request: Request, delivery_id: str):
    """Send a delivery again (same delivery id), e.g. after it failed its last attempt; at most
    TEWATCH_WEBHOOK_REDELIVERIES_PER_MINUTE a minute per subscription (else 429 with Retry-After)."""
    per_minute = get_settings(request).webhook_redeliveries_per_minute
    with write_session(get_engine(request)) as session:
        try:
            delivery = redeliver(session, delivery_id, per_minute)
        except NoSuchDelivery as exc:
            raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc)) from exc
        except AlreadyQueued as exc:
            raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from exc
        except TooManyRedeliveries as exc:
            raise HTTPException(
                status.HTTP_429_TOO_MANY_REQUESTS, str(exc), headers={"Retry-After": str(exc.retry_after)}
            ) from exc
        answer = DeliveryOut.model_validate(delivery)
    worker = getattr(request.app.state, "webhook_worker", None)
    if worker is not None:
        worker.wake()
    return answer
