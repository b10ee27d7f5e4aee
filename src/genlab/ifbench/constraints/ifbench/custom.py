"""IFBench (allenai/IFBench at db69a6f): the `custom:*` constraints (11 ids).

Each unit is a checker ``f(text, kwargs, fixed) -> (ok, reason)`` made a :class:`~genlab.ifbench.core.Constraint` by
``@constraint``; ``fixed`` selects the corrected rule where the reference is known to be wrong.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata

from genlab.ifbench import nlp
from genlab.ifbench.constraints.helpers import STRIP_CHARS, strip_punctuation
from genlab.ifbench.core import constraint


@constraint(
    "custom:multiples",
    "prints exactly the multiples of 7 between 10 and 50",
    describe=lambda kw: "Count from 10 to 50 but write only the multiples of 7.",
)
def _multiples(t, kw, fixed):
    nums = re.findall(r"\d+", t.replace(",", ", "))
    want = [str(i) for i in range(14, 51, 7)]
    ok = nums == want
    return ok, "numbers 14..49 step 7" if ok else f"numbers found {nums[:10]} (needs {want})"


@constraint(
    "custom:mcq_count_length",
    "4 multiple-choice questions, 5 options each, growing longer",
    describe=lambda kw: (
        "Write 4 multiple-choice questions with 5 options each about 20th-century art history. "
        'Label each question "Question"; each question must be longer than the previous; no explanation.'
    ),
)
def _mcq(t, kw, fixed):
    nv = t[t.find("Question") :]
    if nv != t:
        return False, "text before the first 'Question'"
    qs = re.split(r"\n*(?:Question \d+[\.|\):;]?\s*)", t)
    if qs[0] == "":
        qs = qs[1:]
    qs = [q.strip() for q in qs if q.strip()]
    if len(qs) != 4:
        return False, f"{len(qs)} questions (needs 4)"
    lens = []
    for qi, q in enumerate(qs, 1):
        text, opts, done = "", 0, False
        for ln in q.split("\n"):
            if re.match(r"^[A-Ea-e][\.|\)]\s*\w+", ln.strip()):
                opts += 1
                done = True
            elif not done:
                text += " " + ln.strip()
        if opts != 5:
            return False, f"question {qi} has {opts} options (needs 5)"
        lens.append(len(text.strip()))
    ok = all(a < b for a, b in zip(lens, lens[1:]))
    return ok, f"question lengths {lens}" + ("" if ok else " are not increasing")


def _ascii_fold(s: str) -> str:
    return unicodedata.normalize("NFKD", s).encode("ASCII", "ignore").decode("ASCII")


@constraint(
    "custom:reverse_newline",
    "African countries in reverse alphabetical order, one per line",
    describe=lambda kw: "List the countries of Africa in reverse alphabetical order, one per line.",
)
def _reverse_newline(t, kw, fixed):
    lines = [ln.strip(STRIP_CHARS) for ln in t.split("\n") if ln.strip(STRIP_CHARS)]
    start = next((i for i, ln in enumerate(lines) if "Zimbabwe" in ln), None)
    if start is None:
        return False, "no line with 'Zimbabwe'"
    tgt = lines[start:]
    if len(tgt) < 52:
        return False, f"{len(tgt)} lines from Zimbabwe on (needs at least 52)"
    norm = [_ascii_fold(x) for x in tgt]
    ok = norm == sorted(norm, reverse=True)
    return ok, "reverse-sorted" if ok else "lines are not in reverse alphabetical order"


@constraint(
    "custom:word_reverse",
    "answer written in reversed word order (contains 'bald eagle' reversed)",
    describe=lambda kw: (
        "What animal is the national symbol of the US? Answer, but write your sentence with its words in reverse order."
    ),
)
def _word_reverse(t, kw, fixed):
    v = strip_punctuation(t.lower().strip())
    v = " ".join(v.split()[::-1])
    if "bald eagle" not in v:
        return False, "reversed text does not contain 'bald eagle'"
    ok = v in nlp.sent_tokenize(v)
    return ok, "reversed answer is one sentence" if ok else "reversed answer is not a single sentence"


@constraint(
    "custom:character_reverse",
    "answer written letter-reversed (contains 'elgae dlab')",
    describe=lambda kw: (
        "What animal is the national symbol of the US? Answer, but write your sentence with its "
        "letters in reverse order."
    ),
)
def _char_reverse(t, kw, fixed):
    ok = "elgae dlab" in t.lower()
    return ok, "contains 'elgae dlab'" if ok else "does not contain 'elgae dlab'"


@constraint(
    "custom:sentence_alphabet",
    "26 sentences whose first words start a..z",
    describe=lambda kw: (
        "Tell a 26-sentence story in which the first words of the sentences start with A, B, C, ... Z in order."
    ),
    fixed="leading quotes and punctuation before a sentence's first letter are ignored",
)
def _sentence_alphabet(t, kw, fixed):
    s = nlp.sent_tokenize(t)
    if len(s) != 26:
        return False, f"{len(s)} sentences (needs 26)"
    for i, x in enumerate(s):
        w = (x.lstrip().lstrip(STRIP_CHARS + "“‘«") if fixed else x.lstrip()).split()
        if not w or not w[0]:
            return False, f"sentence {i + 1} is empty"
        if w[0].lower()[0] != chr(97 + i):
            return False, f"sentence {i + 1} starts with {w[0]!r}, not '{chr(97 + i)}'"
    return True, "26 sentences a..z"


_CAPITALS = [
    "Reykjavik",
    "Helsinki",
    "Oslo",
    "Tallinn",
    "Stockholm",
    "Riga",
    "Moscow",
    "Copenhagen",
    "Vilnius",
    "Minsk",
    "Dublin",
    "Berlin",
    "Amsterdam",
    "Warsaw",
    "London",
    "Brussels",
    "Prague",
    "Luxembourg",
    "Paris",
    "Vienna",
    "Bratislava",
    "Budapest",
    "Vaduz",
    "Chisinau",
    "Bern",
    "Ljubljana",
    "Zagreb",
]


@constraint(
    "custom:european_capitals_sort",
    "European capitals north of 45°, by latitude, comma-separated",
    describe=lambda kw: (
        "Name every capital of a European country lying north of 45° latitude, as a comma-separated "
        "list sorted from north to south, without country names."
    ),
)
def _capitals(t, kw, fixed):
    caps = [c for c in _ascii_fold(t).split(",") if c.strip()]
    if len(caps) != len(_CAPITALS):
        return False, f"{len(caps)} items (needs {len(_CAPITALS)})"
    for i, (a, b) in enumerate(zip(caps, _CAPITALS)):
        if a.strip() != b:
            return False, f"item {i + 1} is {a.strip()!r}, expected {b!r}"
    return True, "the 27 capitals in order"


def _csv_rows(t: str, **kw) -> list[list[str]] | None:
    try:
        return list(csv.reader(io.StringIO(t), **kw))
    except csv.Error:
        return None


@constraint(
    "custom:csv_city",
    "CSV with header ID,Country,City,Year,Count and 7 rows",
    describe=lambda kw: (
        'Produce CSV with the columns ["ID", "Country", "City", "Year", "Count"], comma-delimited, and 7 data rows.'
    ),
)
def _csv_city(t, kw, fixed):
    data = _csv_rows(t)
    if data is None:
        return False, "not parseable as CSV (the reference raises here)"
    if len(data) != 8:
        return False, f"{len(data)} CSV rows including header (needs 8)"
    if data[0] != ["ID", "Country", "City", "Year", "Count"]:
        return False, f"header is {data[0]}"
    for i, row in enumerate(data[1:], 1):
        if len(row) != 5:
            return False, f"row {i} has {len(row)} fields"
    return True, "valid 7-row CSV"


@constraint(
    "custom:csv_special_character",
    "14-row product CSV with one quoted special-character field",
    describe=lambda kw: (
        'Produce CSV with the columns ["ProductID", "Category", "Brand", "Price", "Stock"], '
        "comma-delimited, 14 data rows; one field must contain a special character and be wrapped in double quotes."
    ),
)
def _csv_special(t, kw, fixed):
    header = t.split("\n")[0].strip()
    if not re.match(
        r'^(ProductID|"ProductID"),[ \t]*(Category|"Category"),[ \t]*(Brand|"Brand"),[ \t]*(Price|"Price"),'
        r'[ \t]*(Stock|"Stock")$',
        header,
    ):
        return False, f"header is {header[:60]!r}"
    data = _csv_rows(t.replace('"', '"""'))
    if data is None:
        return False, "not parseable as CSV (the reference raises here)"
    if len(data) != 15:
        return False, f"{len(data)} CSV rows including header (needs 15)"
    for i, row in enumerate(data[1:], 1):
        if len(row) != 5:
            return False, f"row {i} has {len(row)} fields"
        if any(re.match(r'".*[^\d\w\s].*"', f) for f in row):
            return True, f"row {i} has a quoted special-character field"
    return False, "no quoted field with a special character"


@constraint(
    "custom:csv_quotes",
    "tab-delimited, 3 rows, every field double-quoted",
    describe=lambda kw: (
        'Produce tab-delimited data with the columns ["StudentID", "Subject", "Grade", '
        '"Semester", "Score"] and 3 rows; wrap every field in double quotes.'
    ),
)
def _csv_quotes(t, kw, fixed):
    header = t.split("\n")[0].strip()
    if not re.match(
        r'^(StudentID|"StudentID")\t *(Subject|"Subject")\t *(Grade|"Grade")\t *(Semester|"Semester")\t *'
        r'(Score|"Score")$',
        header,
    ):
        return False, f"header is {header[:60]!r}"
    data = _csv_rows(t.replace('"', '"""'), delimiter="\t")
    if data is None:
        return False, "not parseable as CSV (the reference raises here)"
    if len(data) != 4:
        return False, f"{len(data)} rows including header (needs 4)"
    for i, row in enumerate(data):
        if len(row) != 5:
            return False, f"row {i} has {len(row)} fields"
        for f in row:
            s = f.strip()
            if not s:
                return False, f"row {i} has an empty field (the reference raises here)"
            if not (s[0] == '"' and s[-1] == '"'):
                return False, f"row {i} field {f[:20]!r} is not double-quoted"
    return True, "all fields quoted"


@constraint(
    "custom:date_format_list",
    "comma-separated ISO dates with years 1769–1821",
    describe=lambda kw: (
        "List the start dates of all of Napoleon's battles, separated by commas, in the format "
        "YYYY-MM-DD, with no explanation."
    ),
)
def _dates(t, kw, fixed):
    for d in t.strip().split(","):
        d = d.strip()
        if not re.match(r"^\d{4}-\d{2}-\d{2}$", d):
            return False, f"{d[:20]!r} is not YYYY-MM-DD"
        y, m, day = (int(x) for x in d.split("-"))
        if y < 1769 or y > 1821:
            return False, f"{d}: year outside 1769–1821"
        if (
            m > 12
            or (m in (1, 3, 5, 7, 8, 10, 12) and day > 31)
            or (m in (4, 6, 9, 11) and day > 30)
            or (m == 2 and day > 29)
        ):
            return False, f"{d} is not a valid date"
    return True, "all items are valid dates"
