"""The case archive: one raw file per run that gives back every uploaded case record byte for byte."""

from __future__ import annotations

import gzip
import hashlib

import pytest

from tests.uploads import parts_of, tiny_run
from tewatch.store.schema import case_archive
from tewatch.store.schema.case_archive import CaseArchiveError

ODD_FILES = [
    ("b.json", b'{"message": "na\\u00efve \xc3\xa9l\xc3\xa8ve \\n tab\\t"}\r\n'),
    ("a.json", '{"\u2028": "\U0001f600"}'.encode()),
    ("empty.json", b""),
]


def test_round_trip_is_byte_exact_and_sorted():
    files = parts_of(tiny_run(0))["cases"] + ODD_FILES
    unpacked = case_archive.unpack(case_archive.pack(files))
    assert unpacked == sorted(files)


def test_same_records_give_the_same_bytes_whatever_their_order():
    files = parts_of(tiny_run(0))["cases"]
    assert case_archive.pack(files) == case_archive.pack(list(reversed(files)))


def test_archive_is_plain_gzip_json():
    document = gzip.decompress(case_archive.pack(ODD_FILES))
    assert document.startswith(b'{"schema":"tewatch.cases/1","files":{"a.json":')


def test_member_digests_are_those_of_the_uploaded_files():
    files = parts_of(tiny_run(0))["cases"]
    listed = case_archive.member_digests(case_archive.pack(files))
    assert listed == sorted((f"cases/{name}", hashlib.sha256(content).hexdigest()) for name, content in files)


@pytest.mark.parametrize(
    ("files", "words"),
    [
        ([("x.json", b"\xff\xfe{}")], "not UTF-8"),
        ([("x.json", b"{}"), ("x.json", b"[]")], "appears twice"),
    ],
)
def test_pack_refuses_what_it_could_not_give_back(files, words):
    with pytest.raises(CaseArchiveError, match=words):
        case_archive.pack(files)


@pytest.mark.parametrize(
    "archive",
    [b"", b"not gzip", gzip.compress(b"{}", mtime=0), gzip.compress(b"[1, 2", mtime=0)],
    ids=["empty", "not gzip", "an object", "cut short"],
)
def test_unpack_refuses_anything_else(archive):
    with pytest.raises(CaseArchiveError):
        case_archive.unpack(archive)
