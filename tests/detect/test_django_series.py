"""Two real series of django/django-asv's ubuntu-latest history (python 3.12), read at run time from
../shared/data/ext-django-asv: a huge jump on the newest commits and a change in the share of slow runs."""

import numpy as np
import pytest
from scipy import stats

from tests.history.django_data import ARCHIVE
from tewatch.detect.changepoint import detect_change_points
from tewatch.ingest.archive_series import archive_series

FORM_VALIDATE = "form_benchmarks.form_validate.benchmark.FormValidate.time_form_validate"
Q_CREATE = "query_benchmarks.query_utils_q_create.benchmark.QCreate.time_create_small"


@pytest.fixture(scope="module")
def series():
    if not ARCHIVE.exists():
        pytest.skip(f"{ARCHIVE} is not there (CI keeps ../shared beside the checkout)")
    return archive_series(ARCHIVE, "conda-py3.12", [FORM_VALIDATE, Q_CREATE])


def test_a_huge_jump_onto_a_noisier_level_on_the_newest_commits_is_flagged(series):
    values = series[FORM_VALIDATE].values
    old = np.nanmedian(values[:-40])
    first_of_new_level = int(np.flatnonzero(values <= 30 * old)[-1]) + 1  # the newest commits all above
    assert len(values) - first_of_new_level >= 15
    spread = [
        stats.median_abs_deviation(np.log(part), scale="normal")
        for part in (values[first_of_new_level - 300 : first_of_new_level], values[first_of_new_level:])
    ]
    assert spread[1] > 5 * spread[0]  # the new level is far noisier than the old one
    [cp] = [cp for cp in detect_change_points(values) if cp.index >= len(values) - 40]
    assert cp.first_possible_index <= first_of_new_level <= cp.last_possible_index
    assert cp.effect > 30


def test_a_change_in_the_share_of_slow_runs_is_flagged(series):
    values = series[Q_CREATE].values
    slow = values > 1.2e-4  # the two speeds: about 1.1e-4 s and 1.4e-4 s
    assert ((values < 1.17e-4) | (values > 1.24e-4)).mean() > 0.95
    found = [cp for cp in detect_change_points(values) if cp.effect > 0.1]
    assert found, "no upward change point"
    cp = found[0]
    assert slow[: cp.index].mean() < 0.45 and slow[cp.index :].mean() > 0.75
    assert np.median(values[cp.index :]) / np.median(values[: cp.index]) > 1.2
