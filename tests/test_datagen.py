import zlib

import numpy as np
import pyarrow as pa
import pytest

from ingestlab import datagen


@pytest.fixture(scope="module")
def docs():
    return datagen.documents(3000, np.random.default_rng(11))


def test_a_document_is_the_seeds_chain_of_100_numbers_in_1199_bytes(docs):
    assert docs.shape == (3000, datagen.DOC_BYTES) and datagen.DOC_BYTES == 1199
    for row in docs[:50]:
        numbers = [int(x) for x in row.tobytes().split(b",")]
        steps = np.diff(numbers)
        assert len(numbers) == 100 and len(set(steps)) == 1 and steps[0] > 0
        assert all(len(str(x)) == datagen.DOC_DIGITS for x in numbers)


def test_documents_do_not_compress_with_lz_coders_as_storage_engines_use(docs):
    # RocksDB compresses 4 KiB blocks with Snappy by default and keeps a block compressed
    # only when it saves at least 1/8; LZ4 is the other common choice
    raw = docs.tobytes()
    blocks = [raw[i:i + 4096] for i in range(0, len(raw) - 4096, 4096)]
    for codec in ("snappy", "lz4"):
        ratio = np.mean([len(pa.compress(b, codec=codec, asbytes=True)) / len(b) for b in blocks])
        assert ratio > 0.875, codec


def test_zlib_finds_no_repeated_text_only_the_digit_alphabet(docs):
    # zlib = LZ77 matching + Huffman coding. Huffman alone squeezes 11 symbols to ~3.6 bits
    # each, as for any digit text; that matching on top gains nothing shows there is no
    # repeated text. Compressed size: matching + Huffman vs Huffman only, close to 1.
    raw = docs.tobytes()
    huffman = zlib.compressobj(9, zlib.DEFLATED, 15, 9, zlib.Z_HUFFMAN_ONLY)
    huffman_only = len(huffman.compress(raw) + huffman.flush())
    assert len(zlib.compress(raw, 9)) / huffman_only > 0.95
    assert huffman_only / len(raw) > np.log2(11) / 8 * 0.98  # no better than the alphabet's entropy


def test_documents_differ_between_seeds_and_repeat_with_one(docs):
    again = datagen.documents(3000, np.random.default_rng(11))
    other = datagen.documents(3000, np.random.default_rng(12))
    assert (again == docs).all() and not (other == docs).all()
    assert len({row.tobytes() for row in docs}) == len(docs)


def test_chunks_make_exactly_n_documents_with_their_offsets():
    chunks = list(datagen.document_chunks(25_001, np.random.default_rng(0), chunk_rows=10_000))
    assert [s for s, _ in chunks] == [0, 10_000, 20_000]
    assert sum(len(d) for _, d in chunks) == 25_001


def test_tsv_lines_parse_back_to_keys_and_documents(docs):
    keys = np.array([0, 7, 10**11 + 3])
    text = datagen.tsv_lines(keys, docs[:3]).decode()
    lines = text.splitlines()
    assert [int(line.split("\t")[0]) for line in lines] == keys.tolist()
    assert [line.split("\t")[1].encode() for line in lines] == datagen.row_values(docs[:3])
    with pytest.raises(ValueError):
        datagen.tsv_lines(np.array([-1]), docs[:1])


def test_key_bytes_sort_as_the_numbers_do():
    keys = np.array([5, 256, 1, 2**40, 255])
    encoded = datagen.key_bytes(keys)
    assert all(len(k) == 8 for k in encoded)
    assert [int.from_bytes(k, "big") for k in sorted(encoded)] == sorted(keys.tolist())
