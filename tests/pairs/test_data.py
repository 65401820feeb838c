import csv
import json
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from xcomps_utils import paths
from xcomps_utils.pairs import data, tasks
from xcomps_utils.pairs.data import ChecksumError, DataError, DataQualityWarning

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("task, rows", [("blimp_anaphor", 1000), ("blimp_animacy", 1000),
                                        ("crows_pairs", 1508), ("dust", 2123)])
def test_real_files_load_with_schema(data_dir, task, rows):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        df = tasks.load(task)
    assert len(df) == rows
    assert list(df.columns) == data.PAIR_COLUMNS + ["task"]
    assert df["pair_id"].is_unique
    for side in ("good", "bad"):
        assert (df[side].str.len() > 0).all()
        assert (df[side] == df[side].str.strip()).all()
    # every non-identical pair has at least one pivotal span on some side
    differ = ~df["identical"]
    assert (df.loc[differ, "good_pivots"].map(len) + df.loc[differ, "bad_pivots"].map(len) > 0).all()


def test_blimp_row_content(data_dir):
    df = data.load_blimp("anaphor_gender_agreement")
    first = df.iloc[0]
    assert (first.good, first.bad) == ("Katherine can't help herself.", "Katherine can't help himself.")
    assert first.good[slice(*first.good_pivots[0])] == "herself"
    assert first.bad[slice(*first.bad_pivots[0])] == "himself"


def test_every_blimp_phenomenon_loads(data_dir):
    phenomena = data.blimp_phenomena()
    assert len(phenomena) == 67
    for p in phenomena:
        assert len(data.load_blimp(p)) == 1000, p


def test_crows_direction_and_duplicate_flagged(data_dir):
    with pytest.warns(DataQualityWarning, match="1 duplicate"):
        df = data.load_crows_pairs()
    assert df["duplicate"].sum() == 1
    stereo = data.load_crows_pairs(directions=("stereo",))
    assert 0 < len(stereo) < len(df)
    assert all(json.loads(e)["stereo_antistereo"] == "stereo" for e in stereo["extra"])


def test_dust_whitespace_is_stripped(data_dir):
    path = data_dir / "dust" / "experiment_1_data.csv"
    with open(path, encoding="utf-8", newline="") as f:
        raw = list(csv.DictReader(f))
    padded = sum(r["underspecified sentence"] != r["underspecified sentence"].strip() or
                 r["control sentence"] != r["control sentence"].strip() for r in raw)
    assert padded > 0  # the raw file does carry stray whitespace
    with pytest.warns(DataQualityWarning):
        df = data.load_dust()
    assert (df["good"] == df["good"].str.strip()).all()
    assert (df["bad"] == df["bad"].str.strip()).all()


def _copy(data_dir, tmp_path, dataset, filename):
    (tmp_path / dataset).mkdir(parents=True, exist_ok=True)
    target = tmp_path / dataset / filename
    shutil.copy(data_dir / dataset / filename, target)
    return target


def test_truncated_copy_is_rejected(data_dir, tmp_path):
    target = _copy(data_dir, tmp_path, "blimp", "anaphor_gender_agreement.jsonl")
    target.write_bytes(target.read_bytes()[:5000])
    with pytest.raises(ChecksumError, match="anaphor_gender_agreement.jsonl: SHA-256"):
        data.load_blimp("anaphor_gender_agreement", data_dir=tmp_path)


def test_missing_file_is_named(tmp_path):
    with pytest.raises(DataError, match="missing data file .*experiment_1_data.csv"):
        data.load_dust(data_dir=tmp_path)


def test_malformed_rows_name_file_row_and_field(data_dir, tmp_path):
    target = _copy(data_dir, tmp_path, "blimp", "anaphor_gender_agreement.jsonl")
    lines = target.read_text().splitlines()
    broken = json.loads(lines[2])
    del broken["sentence_bad"]
    target.write_text("\n".join(lines[:2] + [json.dumps(broken)] + lines[3:]) + "\n")
    with pytest.raises(ChecksumError):
        data.load_blimp("anaphor_gender_agreement", data_dir=tmp_path)
    with pytest.raises(DataError, match=r"anaphor_gender_agreement.jsonl, row 3: missing field 'sentence_bad'"):
        data.load_blimp("anaphor_gender_agreement", data_dir=tmp_path, verify=False)
    target.write_text("\n".join(lines[:4] + ["{not json"] + lines[5:]) + "\n")
    with pytest.raises(DataError, match=r"row 5: malformed JSON"):
        data.load_blimp("anaphor_gender_agreement", data_dir=tmp_path, verify=False)


def test_csv_without_a_column_is_refused(data_dir, tmp_path):
    target = _copy(data_dir, tmp_path, "crows_pairs", "crows_pairs_anonymized.csv")
    text = target.read_text(encoding="utf-8")
    target.write_text(text.replace("sent_less", "sentence_less", 1), encoding="utf-8")
    with pytest.raises(DataError, match=r"lacks column\(s\) \['sent_less'\]"):
        data.load_crows_pairs(data_dir=tmp_path, verify=False)


def test_empty_field_is_refused(data_dir, tmp_path):
    target = _copy(data_dir, tmp_path, "dust", "experiment_1_data.csv")
    with open(target, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, list(reader)
    rows[6]["control sentence"] = "   "
    with open(target, "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    with pytest.raises(DataError, match=r"row 7, field 'control sentence': expected a non-empty"):
        data.load_dust(data_dir=tmp_path, verify=False)


def test_unknown_names():
    with pytest.raises(DataError, match="did you mean"):
        data.load_blimp("anaphor_gender_agreemnt")
    with pytest.raises(DataError, match="unknown task"):
        tasks.load("blimp_anaphora")


def test_pivotal_spans():
    assert data.pivotal_spans("Karla could listen to herself.", "Karla could listen to himself.") == (
        [[22, 29]], [[22, 29]])
    a, b = ("If Bob had left, he would be gone.", "If Mary had left, she would be gone.")
    sa, sb = data.pivotal_spans(a, b)
    assert [a[s:e] for s, e in sa] == ["Bob", "he"]
    assert [b[s:e] for s, e in sb] == ["Mary", "she"]
    sa, sb = data.pivotal_spans("我喜欢猫。", "我喜欢狗。")  # Han characters are words
    assert (sa, sb) == ([[3, 4]], [[3, 4]])
    sa, sb = data.pivotal_spans("This applies.", "This fact applies.")  # pure insertion
    assert (sa, sb) == ([], [[5, 9]])


def test_sampling_is_seeded_and_keeps_pairs_whole(data_dir):
    with pytest.warns(DataQualityWarning):
        df = data.load_dust()
    a, b = data.sample_pairs(df, 50, seed=3), data.sample_pairs(df, 50, seed=3)
    assert a.equals(b)
    assert not a["pair_id"].equals(data.sample_pairs(df, 50, seed=4)["pair_id"])
    original = df.set_index("pair_id")
    for _, row in a.iterrows():  # good and bad still come from the same source row
        assert (original.loc[row.pair_id, "good"], original.loc[row.pair_id, "bad"]) == (row.good, row.bad)
    assert not (a["duplicate"] | a["identical"]).any()
    assert len(data.sample_pairs(df, None)) == len(df) - int((df.duplicate | df.identical).sum())


@pytest.fixture
def served_dust(data_dir, tmp_path, monkeypatch):
    """DUST's experiment_1_data.csv served over local HTTP, its manifest pointing there; neither
    XCOMPS_DATA_DIR nor XCOMPS_CACHE_DIR set. Yields the served file."""
    import functools
    import http.server
    import threading

    served = tmp_path / "served"
    f = _copy(data_dir, served, "dust", "experiment_1_data.csv")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=served / "dust")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    meta = dict(data.manifest("dust"))
    meta["url_template"] = f"http://127.0.0.1:{server.server_port}/{{file}}"
    monkeypatch.setattr(data, "manifest", lambda name: meta)
    monkeypatch.delenv("XCOMPS_DATA_DIR", raising=False)
    monkeypatch.delenv("XCOMPS_CACHE_DIR", raising=False)
    yield f
    server.shutdown()


def test_download_from_pinned_upstream(served_dust, tmp_path, monkeypatch):
    """Without XCOMPS_DATA_DIR the file is fetched from the manifest's URL and verified; an
    explicit XCOMPS_CACHE_DIR is where it lands."""
    monkeypatch.setenv("XCOMPS_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.warns(DataQualityWarning):
        assert len(data.load_dust()) == 2123
    landed = tmp_path / "cache" / "data" / "dust" / "experiment_1_data.csv"
    assert landed.exists()
    # a wrong upstream file is refused after download
    landed.unlink()
    served_dust.write_bytes(served_dust.read_bytes() + b"\n")
    with pytest.raises(ChecksumError):
        data.load_dust()


# ----------------------------------------------------------------- where downloads land

@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A checkout's data/ elsewhere: the project's own files of data/ copied to
    ``tmp/src/data`` and the package told it runs from there (not from an install)."""
    target = tmp_path / "src" / "data"
    shutil.copytree(paths.resources_dir(), target,
                    ignore=lambda d, names: [n for n in names if (Path(d) / n).is_dir()
                                             and n != "sample" and Path(d).name != "sample"])
    monkeypatch.setattr(paths, "_CHECKOUT", target)
    monkeypatch.setattr(paths, "_INSTALLED", tmp_path / "src" / "xcomps_utils" / "resources")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    return target


def test_this_checkout_reads_and_downloads_into_top_level_data(monkeypatch):
    """Run from this checkout, the package's own files are the top-level data/, and downloads
    default to data/<dataset>/, which git ignores (the manifests, notes and sample it tracks)."""
    monkeypatch.delenv("XCOMPS_CACHE_DIR", raising=False)
    assert paths.resources_dir() == REPO / "data" and paths.in_checkout()
    assert paths.data_home() == REPO / "data"
    assert not (REPO / "xcomps_utils" / "resources").exists()
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout: .gitignore cannot be checked")
    probe = ["data/dust/experiment_1_data.csv", "data/clams/de/simple_agrmt.txt",
             "data/xcomps/comps_de.json", "data/dust.json", "data/dust.md", "data/README.md",
             "data/sample/xcomps/comps_de.json", "data/sample/README.md"]
    out = subprocess.run(["git", "check-ignore", *probe], cwd=REPO, capture_output=True,
                         text=True).stdout.split()
    assert out == probe[:3]


def test_download_lands_in_the_checkouts_data_folder(served_dust, checkout):
    with pytest.warns(DataQualityWarning):
        assert len(data.load_dust()) == 2123
    assert (checkout / "dust" / "experiment_1_data.csv").is_file()
    assert not (checkout.parent.parent / "user-cache").exists()
    assert paths.data_home() == checkout


def test_data_dir_and_env_win_over_the_default(data_dir, checkout, monkeypatch, tmp_path):
    """data_dir= beats $XCOMPS_DATA_DIR beats $XCOMPS_CACHE_DIR beats the checkout's data/."""
    name = "experiment_1_data.csv"
    monkeypatch.setenv("XCOMPS_DATA_DIR", str(data_dir))
    assert data.dataset_file("dust", name) == data_dir / "dust" / name
    other = tmp_path / "other"
    _copy(data_dir, other, "dust", name)
    assert data.dataset_file("dust", name, data_dir=other) == other / "dust" / name
    monkeypatch.delenv("XCOMPS_DATA_DIR")
    monkeypatch.setenv("XCOMPS_CACHE_DIR", str(tmp_path / "cache"))
    assert paths.data_home() == tmp_path / "cache" / "data"
    assert not (checkout / "dust").exists()


def test_installed_package_downloads_into_the_user_cache(checkout, monkeypatch, tmp_path):
    """A non-editable install (the package's own resources/ present): its files come from there
    and downloads go to the user cache, not to a data/ folder (tests/test_packaging.py installs
    one for real)."""
    installed = tmp_path / "site-packages" / "xcomps_utils" / "resources"
    shutil.copytree(checkout, installed)
    monkeypatch.setattr(paths, "_INSTALLED", installed)
    monkeypatch.delenv("XCOMPS_CACHE_DIR", raising=False)
    assert paths.resources_dir() == installed and not paths.in_checkout()
    assert paths.data_home() == tmp_path / "user-cache" / "xcomps-study" / "data"
    monkeypatch.setenv("XCOMPS_CACHE_DIR", str(tmp_path / "cache"))
    assert paths.data_home() == tmp_path / "cache" / "data"


def test_missing_data_files_are_named(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "_INSTALLED", tmp_path / "pkg" / "resources")
    monkeypatch.setattr(paths, "_CHECKOUT", tmp_path / "data")
    with pytest.raises(FileNotFoundError, match=r"no xcomps.json in .*pkg/resources .* nor in .*/data"):
        paths.resources_dir()
