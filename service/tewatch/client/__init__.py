"""tewatch's history as pandas DataFrames, read over the JSON API (`pip install "tewatch[analysis]"`).

    from tewatch.client import Client

    with Client("http://127.0.0.1:8000") as tw:
        runs = tw.runs(branch="main")
        linear = tw.series(case="linear.LinearFwdBwd")
        samples = tw.samples(linear["series_id"], branch="main")

Every method answers a DataFrame with declared dtypes (tewatch.client.frames): times are
datetime64[ns, UTC], ids and counts Int64, measurements float64, labels with few values category, other
text string; an empty answer has the same columns. The client pages through every route that pages. A
server that cannot be reached, or that refuses a request (a 4xx, e.g. a bad filter or a missing token),
raises ClientError with one sentence saying so. The DataFrames are client side: the service never imports
pandas. tewatch.client.api is the JSON API's client without pandas, the one `tewatch upload`, `tewatch
commits` and the campaign use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tewatch.client.api import ClientError
    from tewatch.client.dataframes import Client

__all__ = ["Client", "ClientError"]


def __getattr__(name: str) -> Any:
    # pandas and httpx are imported where they are used: `tewatch upload` and the campaign use the API
    # client (tewatch.client.api) on installs without the analysis extra
    if name == "Client":
        from tewatch.client.dataframes import Client

        return Client
    if name == "ClientError":
        from tewatch.client.api import ClientError

        return ClientError
    raise AttributeError(name)
