"""The documents keep their shape: NOTES.txt's file map names every file of the component
and nothing else, and NOTES.txt, README.md and osc_harness/PERFORMANCE.md stay within the
lengths issue 44 set (NOTES.txt also free of dates and session logs: git log keeps history).
No MPI; nothing is built or launched."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTES = ROOT / "NOTES.txt"
COMPONENT = ROOT / "btl_ofi"
SOURCES_AM = COMPONENT / "sources.am"

#: btl_ofi/ files the map must name besides those sources.am lists.
BUILD_FILES = ("sources.am", "configure.m4", "Makefile.am")

#: Section numbers that C comments, help texts, tests and scripts cite ("NOTES.txt 2c").
CITED_SECTIONS = ("1", "1b", "2", "2b", "2c", "2d", "2e", "3", "3b", "3c", "3d", "4", "5",
                  "5b", "6", "6b", "6c", "7", "8", "9", "10", "11", "12", "13", "14", "14a",
                  "14b")

LIMITS = {"NOTES.txt": 900, "README.md": 250, "osc_harness/PERFORMANCE.md": 500}


def notes_file_map(text):
    """The file names of NOTES.txt's map: the lines after "File map:" up to the first blank
    line, each starting with a name; "x.c/.h" stands for x.c and x.h."""
    lines = text.splitlines()
    try:
        start = lines.index("File map:")
    except ValueError:
        pytest.fail('NOTES.txt has no "File map:" line (section 1)')
    names = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        first = line.split()[0]
        if first.endswith(".c/.h"):
            stem = first[:-len(".c/.h")]
            names += [stem + ".c", stem + ".h"]
        else:
            names.append(first)
    return names


def component_files(text):
    """What sources.am lists (%reldir%/NAME), less the files the build generates."""
    generated = set()
    match = re.search(r"^btl_ofi_built_sources\s*=(.*)$", text, re.M)
    if match:
        generated = set(re.findall(r"%reldir%/([\w.+-]+)", match.group(1)))
    listed = re.findall(r"%reldir%/([\w.+-]+)", text)
    return sorted(set(listed) - generated)


def expected_files():
    return sorted(set(component_files(SOURCES_AM.read_text())) | set(BUILD_FILES))


def mapped_files():
    return notes_file_map(NOTES.read_text())


@pytest.mark.parametrize("name", expected_files())
def test_component_file_is_in_the_map(name):
    """Every file of the component has its line in NOTES.txt section 1."""
    assert name in mapped_files(), (
        f"btl_ofi/{name} is missing from NOTES.txt's file map (section 1): add one line "
        f"saying its concern")


@pytest.mark.parametrize("name", mapped_files())
def test_mapped_file_exists(name):
    """The map names no file the component does not have."""
    assert (COMPONENT / name).is_file(), (
        f"NOTES.txt's file map names btl_ofi/{name}, which does not exist")
    assert name in expected_files(), (
        f"NOTES.txt's file map names btl_ofi/{name}, which btl_ofi/sources.am does not list")


def test_map_names_each_file_once():
    names = mapped_files()
    twice = sorted({n for n in names if names.count(n) > 1})
    assert not twice, f"NOTES.txt's file map names these more than once: {twice}"


def test_parsers():
    """The parsers read what the documents write: pairs, generated sources, the end."""
    text = "intro\nFile map:\n  a.c/.h   x\n  b.txt    y\n\n  c.c  after the map\n"
    assert notes_file_map(text) == ["a.c", "a.h", "b.txt"]
    am = ("s = \\\n    %reldir%/a.c \\\n    %reldir%/a.h\n"
          "btl_ofi_built_sources = %reldir%/gen.h\n%reldir%/gen.h: %reldir%/in.txt\n")
    assert component_files(am) == ["a.c", "a.h", "in.txt"]


@pytest.mark.parametrize("path,limit", sorted(LIMITS.items()))
def test_document_length(path, limit):
    count = len((ROOT / path).read_text().splitlines())
    assert count <= limit, f"{path} has {count} lines, more than {limit}"


def test_notes_has_no_history():
    """No dates and no session logs in the design notes."""
    for number, line in enumerate(NOTES.read_text().splitlines(), 1):
        assert not re.search(r"\b\d{4}-\d{2}-\d{2}\b", line), f"NOTES.txt:{number}: a date: {line}"
        assert "session" not in line.lower(), f"NOTES.txt:{number}: a session: {line}"


def test_cited_sections_exist():
    """The section numbers other files cite are still NOTES.txt's section titles."""
    titles = set(re.findall(r"^(\d+[a-z]?)\. \S", NOTES.read_text(), re.M))
    missing = [s for s in CITED_SECTIONS if s not in titles]
    assert not missing, f"NOTES.txt lacks sections {missing}"
