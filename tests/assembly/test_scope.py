"""Graded write-scope fit (pure): coverage of the scope and specificity of the tags."""

from __future__ import annotations

import pytest

from assembly.scope import KEYWORD, scope_grade, specificity

PATH = "src/pkg/sub/views.py"


def test_the_very_path_beats_a_deep_directory_a_shallow_one_and_a_keyword():
    grades = [
        specificity(tag, PATH) for tag in (PATH, "src/pkg/sub/**", "src/pkg/**", "src/**", "views")
    ]
    assert grades == sorted(grades, reverse=True)
    assert len(set(grades)) == len(grades)
    assert grades[0] == 1.0
    assert grades[-1] == KEYWORD


@pytest.mark.parametrize("tag", ["tests/**", "src/other/**", "models", "src/pkg/sub/x.py"])
def test_a_tag_that_does_not_match_grades_zero(tag):
    assert specificity(tag, PATH) == 0.0


def test_a_memory_that_covers_more_of_the_scope_grades_higher():
    scope = ["src/a.py", "tests/test_a.py"]
    both = scope_grade(["src/**", "tests/**"], scope)
    one = scope_grade(["src/**"], scope)
    assert both == pytest.approx(2 * one)
    assert scope_grade(["docs/**"], scope) == 0.0


def test_a_glob_in_the_write_scope_is_graded_by_its_literal_part():
    assert specificity("src/core/**", "src/core/**") > specificity("src/**", "src/core/**") > 0
