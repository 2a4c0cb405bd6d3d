"""testbed/upstream_dra.py reads the upstream table's case names and bodies, and tells a
builder renamed (release-1.35's `claimWithRequest`) from a changed case."""

from __future__ import annotations

from testbed.upstream_dra import cases, normalized

TABLE = """
func TestAllocator(t *testing.T) {
\ttestcases := map[string]struct {
\t\tclaims []string
\t}{
\t\t"empty": {},
\t\t"simple": {
\t\t\tclaimsToAllocate: objects(claim(claim0, req0, classA)),
\t\t},
\t\t"other": {
\t\t\tslices: unwrap(x), // a comment
\t\t},
\t}
}
"""


def test_the_table_is_read_case_by_case() -> None:
    assert cases(TABLE) == {
        "empty": "",
        "simple": "\t\t\tclaimsToAllocate: objects(claim(claim0, req0, classA)),",
        "other": "\t\t\tslices: unwrap(x), // a comment",
    }


def test_a_renamed_builder_is_no_change() -> None:
    renamed = "\t\t\tclaimsToAllocate:   objects(claimWithRequest(claim0, req0, classA)),"
    assert normalized(renamed) == normalized(cases(TABLE)["simple"])
    assert normalized("slices: unwrapResourceSlices(x),") == normalized(cases(TABLE)["other"])
