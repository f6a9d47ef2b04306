"""The planner exams' jobs documents (`harness/exams/jobs/`): each a valid document whose one
job bears its exam's name, as the exam's refs (`name/endpoint`) and gradings assume."""

from __future__ import annotations

import pytest

from cronpilot.adapters.jobs_file import parse_declarations
from cronpilot.harness.exams.catalog import EXAMS, Exam
from cronpilot.harness.stories import LOOPBACK


@pytest.mark.parametrize("exam", EXAMS, ids=lambda exam: exam.name)
def test_an_exam_declares_one_job_of_its_name_holding_the_endpoints_it_grades(exam: Exam) -> None:
    for rules in (True, False):
        (declared,) = parse_declarations(
            exam.jobs_for(rules), exam.name, LOOPBACK, {"SIMULATOR_URL": "http://127.0.0.1:1"}
        )
        assert declared.job.name == exam.name
        assert set(exam.graded) <= {endpoint.name for endpoint in declared.endpoints}
