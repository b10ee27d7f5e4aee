"""Hand-written examples: for every constraint, kwargs plus at least three responses that follow it and three
that do not (under ``semantics="reference"``), and for ids whose fixed semantics differ, texts on which the two
semantics disagree. They serve as the test table and as the embedded default evaluation set
(``genlab ifbench eval`` with no files)."""

from __future__ import annotations

from typing import Any

_LOREM = "The river runs past the old mill and the children play in the shallow water near the bridge."
_AFRICA_UNSORTED = [
    "Zimbabwe", "Zambia", "Uganda", "Tunisia", "Togo", "Tanzania", "Sudan", "South Sudan", "South Africa",
    "Somalia", "Sierra Leone", "Seychelles", "Senegal", "Sao Tome and Principe", "Rwanda", "Nigeria", "Niger",
    "Namibia", "Mozambique", "Morocco", "Mauritius", "Mauritania", "Mali", "Malawi", "Madagascar", "Libya",
    "Liberia", "Lesotho", "Kenya", "Guinea-Bissau", "Guinea", "Ghana", "Gambia", "Gabon", "Ethiopia",
    "Eswatini", "Eritrea", "Equatorial Guinea", "Egypt", "Djibouti", "Cote d'Ivoire", "Congo",
    "Democratic Republic of the Congo", "Comoros", "Chad", "Central African Republic", "Cameroon", "Cabo Verde",
    "Burundi", "Burkina Faso", "Botswana", "Benin", "Angola", "Algeria",
]
_AFRICA = sorted(_AFRICA_UNSORTED, reverse=True)
_CAPS = ("Reykjavik, Helsinki, Oslo, Tallinn, Stockholm, Riga, Moscow, Copenhagen, Vilnius, Minsk, Dublin, Berlin, "
         "Amsterdam, Warsaw, London, Brussels, Prague, Luxembourg, Paris, Vienna, Bratislava, Budapest, Vaduz, "
         "Chisinau, Bern, Ljubljana, Zagreb")
_ALPHA26 = " ".join(
    f"{w} {r}." for w, r in zip(
        "Alice Bob Carol Dan Eve Fay Gus Hal Ivy Jo Kim Lee Max Ned Oz Pam Quin Ray Sam Tom Uma Vic Wes Xena Yul Zed"
        .split(), ["ran"] * 26)
)
_MCQ = "\n".join(
    f"Question {i}: {q}\nA. one\nB. two\nC. three\nD. four\nE. five" for i, q in enumerate(
        ["Who?", "Who painted it?", "Which movement came first?", "Which artist founded the Dada movement in Zurich?"],
        1)
)
_CSV_CITY = "ID,Country,City,Year,Count\n" + "\n".join(f"{i},France,Paris,{2000 + i},{i * 10}" for i in range(1, 8))
_CSV_SPECIAL = "ProductID,Category,Brand,Price,Stock\n" + "\n".join(
    f"{i},Tools,Acme,{i}.99,{i * 3}" for i in range(1, 14)) + '\n14,Tools,"Acme & Sons",9.99,4'
_CSV_QUOTES = '"StudentID"\t"Subject"\t"Grade"\t"Semester"\t"Score"\n' + "\n".join(
    f'"{i}"\t"Math"\t"A"\t"Fall"\t"9{i}"' for i in range(1, 4))

# id -> {"kwargs", "passing", "failing", optional "differs": [(text, reference_ok, fixed_ok)]}
EXAMPLES: dict[str, dict[str, Any]] = {
    # ------------------------------------------------------------------------------------------ IFEval
    "keywords:existence": {
        "kwargs": {"keywords": ["river", "stone"]},
        "passing": ["A stone sat by the river.", "RIVER and STONE.", "The river carried the stone away."],
        "failing": ["Only a river here.", "A stone, nothing else.", "Nothing relevant at all."],
        "differs": [("Riverside stonework.", True, False)],
    },
    "keywords:frequency": {
        "kwargs": {"keyword": "cat", "frequency": 2, "relation": "at least"},
        "passing": ["cat cat", "The cat saw another cat.", "Cat, cat and cat."],
        "failing": ["one cat", "no felines", "A dog and a cat."],
        "differs": [("The category of cats.", True, False)],
    },
    "keywords:forbidden_words": {
        "kwargs": {"forbidden_words": ["blue", "sky"]},
        "passing": ["The grass is green.", "Bluebird songs.", "A skylark flew."],
        "failing": ["The sky is clear.", "Blue water.", "I like blue skies and the sky."],
    },
    "keywords:letter_frequency": {
        "kwargs": {"letter": "z", "let_frequency": 3, "let_relation": "less than"},
        "passing": ["Hello there.", "A zebra.", "Zig zag."],
        "failing": ["Zzz.", "The zany zebra zooms.", "Pizza pizzazz."],
    },
    "language:response_language": {
        "kwargs": {"language": "fr"},
        "passing": [
            "Bonjour, je suis très heureux de vous rencontrer aujourd'hui dans cette belle ville de Paris.",
            "Le chat dort sur le canapé pendant que les enfants jouent dans le jardin avec leurs amis.",
            "Nous avons mangé une délicieuse soupe à l'oignon avant de partir pour la gare centrale.",
        ],
        "failing": [
            "Hello, I am very happy to meet you today in this beautiful city of London.",
            "Der Hund schläft auf dem Sofa, während die Kinder im Garten mit ihren Freunden spielen.",
            "El gato duerme en el sofá mientras los niños juegan en el jardín con sus amigos.",
        ],
        "differs": [("12345 67890", True, False)],
    },
    "length_constraints:number_sentences": {
        "kwargs": {"num_sentences": 3, "relation": "less than"},
        "passing": ["One sentence.", "First one. Second one.", "Mr. Smith went to Washington. He stayed."],
        "failing": ["I ran. You ran. We ran.", "One. Two. Three. Four.", "Hi there. How are you? I am fine!"],
    },
    "length_constraints:number_paragraphs": {
        "kwargs": {"num_paragraphs": 2},
        "passing": ["First part.\n***\nSecond part.", "A\n***\nB\n***", "Alpha text. *** Beta text."],
        "failing": ["Only one paragraph.", "A\n***\n***\nB", "A\n***\nB\n***\nC"],
    },
    "length_constraints:number_words": {
        "kwargs": {"num_words": 5, "relation": "at least"},
        "passing": ["one two three four five", "This sentence has exactly six words.", "a b c d e f g"],
        "failing": ["one two", "Just four words here.", ""],
    },
    "length_constraints:nth_paragraph_first_word": {
        "kwargs": {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"},
        "passing": ["First we ate.\n\nThen we slept.", "Start.\n\n\"Then,\" she said.", "A b.\n\nthen c."],
        "failing": ["First we ate.\n\nLater we slept.", "Then alone.", "A.\n\nThen b.\n\nC."],
        "differs": [("\n\nFirst.\n\nThen we slept.", False, True)],
    },
    "detectable_content:number_placeholders": {
        "kwargs": {"num_placeholders": 2},
        "passing": ["Dear [name], see [address].", "[a][b]", "Fill [x], [y] and [z]."],
        "failing": ["Dear [name].", "No placeholders.", "Broken [bracket"],
    },
    "detectable_content:postscript": {
        "kwargs": {"postscript_marker": "P.S."},
        "passing": ["Hello.\nP.S. bye", "Text\np.s. lower", "Body.\n  P. S. spaced"],
        "failing": ["Hello. PS bye", "No postscript.", "Hello.\nPS: later"],
    },
    "detectable_format:number_bullet_lists": {
        "kwargs": {"num_bullets": 2},
        "passing": ["* one\n* two", "- a\n- b", "Intro\n* one\n- two"],
        "failing": ["* one", "* a\n* b\n* c", "**bold**\n**bold**"],
    },
    "detectable_format:constrained_response": {
        "kwargs": {},
        "passing": ["My answer is yes.", "Well... My answer is no.", "My answer is maybe. Thanks"],
        "failing": ["Yes.", "my answer is yes.", "My answer is probably."],
    },
    "detectable_format:number_highlighted_sections": {
        "kwargs": {"num_highlights": 2},
        "passing": ["*one* and *two*", "**bold** *it*", "*a*\n*b*\n*c*"],
        "failing": ["*one* only", "no highlights", "** **"],
    },
    "detectable_format:multiple_sections": {
        "kwargs": {"section_spliter": "Section", "num_sections": 2},
        "passing": ["Section 1\nA\nSection 2\nB", "Section 1 a Section 2 b Section 3 c", "Section1 x Section2 y"],
        "failing": ["Section 1\nonly one", "Part 1 Part 2", "Section A Section B"],
    },
    "detectable_format:json_format": {
        "kwargs": {},
        "passing": ['{"a": 1}', '```json\n{"a": [1, 2]}\n```', "[1, 2, 3]"],
        "failing": ["{a: 1}", "Here is JSON: {\"a\": 1}", "```json\n{\"a\": }\n```"],
    },
    "detectable_format:title": {
        "kwargs": {},
        "passing": ["<<My Title>>\nText", "Text <<t>>", "<< spaced >>"],
        "failing": ["<<>>", "No title", "<<\n>>"],
    },
    "combination:two_responses": {
        "kwargs": {},
        "passing": ["Answer one.\n******\nAnswer two.", "A******B", "******\nX\n******\nY"],
        "failing": ["Only one.", "Same.\n******\nSame.", "A\n******\n\n******\nB"],
    },
    "combination:repeat_prompt": {
        "kwargs": {"prompt_to_repeat": "Write a poem about cats."},
        "passing": ["Write a poem about cats. Cats are soft.", "write a poem about cats.\nMeow.",
                    "  Write a poem about cats. ok"],
        "failing": ["Cats are soft.", "Write a poem about dogs.", "Sure! Write a poem about cats."],
    },
    "startend:end_checker": {
        "kwargs": {"end_phrase": "Any other questions?"},
        "passing": ["Done. Any other questions?", "\"Text. any other questions?\"", "Any other questions?  "],
        "failing": ["Any other questions? Bye.", "No questions.", "Any other question?"],
    },
    "change_case:capital_word_frequency": {
        "kwargs": {"capital_frequency": 2, "capital_relation": "at least"},
        "passing": ["THIS IS loud.", "NASA and ESA.", "I AM here."],
        "failing": ["Only ONE.", "no caps", "Mixed Case Words."],
    },
    "change_case:english_capital": {
        "kwargs": {},
        "passing": ["THIS IS A SENTENCE WRITTEN IN ENGLISH WITH CAPITAL LETTERS ONLY.",
                    "HELLO WORLD, THE WEATHER IS NICE TODAY AND WE ARE GOING TO THE PARK.",
                    "I LOVE READING BOOKS ABOUT HISTORY AND SCIENCE IN THE EVENING."],
        "failing": ["This is not all caps.", "CECI EST UNE PHRASE ÉCRITE EN FRANÇAIS AVEC DES MAJUSCULES.",
                    "hello world"],
    },
    "change_case:english_lowercase": {
        "kwargs": {},
        "passing": ["this is a sentence written in english with lowercase letters only.",
                    "hello world, the weather is nice today and we are going to the park.",
                    "i love reading books about history and science in the evening."],
        "failing": ["This has a capital.", "ceci est une phrase écrite en français avec des minuscules.", "ALL CAPS"],
    },
    "punctuation:no_comma": {
        "kwargs": {},
        "passing": ["No commas here.", "A; B: C.", "Ünïcødé 😀 text"],
        "failing": ["One, two.", ",", "a,b"],
    },
    "startend:quotation": {
        "kwargs": {},
        "passing": ['"Quoted."', '  "spaced"  ', '"a"'],
        "failing": ["No quotes.", '"', '"half'],
    },
    # ------------------------------------------------------------------------------------------ IFBench
    "count:word_count_range": {
        "kwargs": {"min_words": 3, "max_words": 5},
        "passing": ["one two three", "a b c d e", "It's a test."],
        "failing": ["one two", "a b c d e f", "x"],
    },
    "count:unique_word_count": {
        "kwargs": {"N": 3},
        "passing": ["a b c", "The cat, the dog and the bird.", "one two three four"],
        "failing": ["a a a", "a b", "Go go go!"],
    },
    "ratio:stop_words": {
        "kwargs": {"percentage": 30},
        "passing": ["Cats chase mice quickly.", "Bright stars shine.", "Green apples taste sour and crisp."],
        "failing": ["The cat is on the mat.", "It was what it was.", "I am here."],
    },
    "ratio:sentence_type": {
        "kwargs": {},
        "passing": ["I walk. I run. Why?", "I go. You run. He sits. We eat. Why? How?", "Just words"],
        "failing": ["I walk. Why?", "Why? How?", "A. B. C. Why?"],
        "differs": [("Just words", True, False)],
    },
    "ratio:sentence_balance": {
        "kwargs": {},
        "passing": ["Yes. Why? Wow!", "I go. Why? Wow! We stay. How? Great!", "no end marks"],
        "failing": ["Yes. Why?", "Wow! Wow!", "Yes. Why? Wow! Done."],
        "differs": [("no end marks", True, False)],
    },
    "count:conjunctions": {
        "kwargs": {"small_n": 3},
        "passing": ["I came and saw but left so what.", "And but or.", "for nor yet"],
        "failing": ["I came and saw.", "no joiners here", "and or"],
        "differs": [("and and, or", True, False)],
    },
    "count:person_names": {
        "kwargs": {"N": 2},
        "passing": ["Emma met Liam.", "Noah, Ava and Mia.", "Grace and Owen"],
        "failing": ["Emma alone.", "emma and liam", "Emmanuel and Liamson"],
    },
    "ratio:overlap": {
        "kwargs": {"reference_text": "abcdef", "percentage": 50},
        "passing": ["abcdxy", "abcdzz", "cdefgh"],
        "failing": ["abcdef", "xyzxyz", "ab"],
        "differs": [("abcdxy", True, False)],
        "fixed": {"kwargs": {"reference_text": "the cat sat on the mat and slept", "percentage": 50},
                  "passing": ["the cat sat on a rug", "The mat and slept well now.", "x y on the mat and"],
                  "failing": ["the cat sat on the mat", "a b c d", "hi"]},
    },
    "count:numbers": {
        "kwargs": {"N": 2},
        "passing": ["I have 3 cats and 4 dogs.", "Pi is 3.14 and e is 2.71.", "1 2"],
        "failing": ["One number: 5.", "1 2 3", "none"],
    },
    "words:alphabet": {
        "kwargs": {},
        "passing": ["Apples bring cheer.", "Xray yak zebra apple", "a, b; c!"],
        "failing": ["Apples cheer.", "1 apple", "Apple apple"],
    },
    "words:vowel": {
        "kwargs": {},
        "passing": ["A cat sat.", "Big fat cats sit.", "hmm"],
        "failing": ["A cat sat.\nTwo lines.", "Education is useful.", "aeiou"],
    },
    "words:consonants": {
        "kwargs": {},
        "passing": ["Strong blacksmiths craft.", "Splendid thrills", "Fresh bread"],
        "failing": ["A cat.", "Strong cat", "I am"],
    },
    "sentence:alliteration_increment": {
        "kwargs": {},
        "passing": ["Hello world. Big bad wolf. Super silly snakes slither.", "One.", "A x. Red rose."],
        "failing": ["Big bad wolf. Hello world.", "Red rose. Tall tree.", "Big bear. Tall oak."],
    },
    "words:palindrome": {
        "kwargs": {},
        "passing": ["level radar civic kayak rotor refer madam stats tenet sagas",
                    "Level, radar, civic, kayak, rotor, refer, madam, stats, tenet, racecar.",
                    "level radar civic kayak rotor refer madam stats tenet sagas solos"],
        "failing": ["level radar civic", "nothing here", "mom dad wow pop bob eve nun gig did tot"],
        "differs": [("level " * 10, True, False)],
    },
    "count:punctuation": {
        "kwargs": {},
        "passing": ["Hi, there. Wait; what: really?! Yes! Why?", "Stop?! Go, now. Ok; fine: yes! no?",
                    "A‽ b, c. d; e: f! g?"],
        "failing": ["Hi, there. Wait; what: really? Yes!", "?!", "No interrobang, here. ; : ! ?"],
    },
    "format:parentheses": {
        "kwargs": {},
        "passing": ["(a [b {c (d [e])}])", "x ( ( ( ( ( y ) ) ) ) )", "{[({[deep]})]}"],
        "failing": ["(a [b {c (d)}])", "no brackets", "((((( unclosed"],
    },
    "format:quotes": {
        "kwargs": {},
        "passing": ["He said \"she said 'he said \"hi\"'\"", "'a \"b 'c' d\" e'", "\"x 'y \"z\" y' x\""],
        "failing": ["He said \"hi\"", "no quotes", "\"a 'b' c\""],
    },
    "words:prime_lengths": {
        "kwargs": {},
        "passing": ["We are the kings", "It is", "Be at the zoo"],
        "failing": ["A cat", "Four", "This word"],
    },
    "format:options": {
        "kwargs": {"options": "yes/no/maybe"},
        "passing": ["yes", "No.", "  Maybe!"],
        "failing": ["yes, because", "perhaps", "yes no"],
    },
    "format:newline": {
        "kwargs": {},
        "passing": ["one\ntwo\nthree", "Hello,\nworld!", "single"],
        "failing": ["one two\nthree", "a b", "x\ny z"],
    },
    "format:emoji": {
        "kwargs": {},
        "passing": ["I love pizza 🍕. It is great 😀.", "Hello 👋", "Sun is out ☀️. Rain later 🌧️!"],
        "failing": ["I love pizza.", "Hello 👋. Bye.", "No emoji here!"],
    },
    "ratio:sentence_words": {
        "kwargs": {},
        "passing": ["Cats run. Dogs bit. Owls fly.", "I see. We go. Be it.", "Red sun. Big sky. Hot day."],
        "failing": ["Cats run. Dogs bite. Owls fly.", "One. Two.", "A b. C d. E f. G h."],
        "differs": [("Cats run. Cats run. Cats run.", True, False)],
    },
    "count:words_japanese": {
        "kwargs": {"N": 2},
        "passing": ["I 猫 have 犬 two 鳥", "Hello 世界", "one"],
        "failing": ["I cat have dog", "Hello world", "猫 dog"],
    },
    "words:start_verb": {
        "kwargs": {},
        "passing": ["Take the bus.", "Go away.", "Is it raining?"],
        "failing": ["The dog ran.", "Quickly, go.", "I think so."],
    },
    "words:repeats": {
        "kwargs": {"small_n": 2},
        "passing": ["the cat and the dog", "a b c", "Go, go."],
        "failing": ["the the the", "Go go GO.", "a a a b"],
    },
    "sentence:keyword": {
        "kwargs": {"word": "apple", "N": 2},
        "passing": ["First. Then an apple.", "One. APPLE pie.", "I ate. The apple, red. Done."],
        "failing": ["An apple. Then none.", "Only one sentence with apple.", "First. Pineapple."],
    },
    "count:pronouns": {
        "kwargs": {"N": 3},
        "passing": ["I told you that he left.", "She and they and we.", "he/him/his"],
        "failing": ["The dog ran.", "I ran.", "Cats and dogs and me."],
    },
    "words:odd_even_syllables": {
        "kwargs": {},
        "passing": ["cat apple dog", "run happy", "go"],
        "failing": ["cat dog", "happy apple", "run go"],
    },
    "words:last_first": {
        "kwargs": {},
        "passing": ["I like cats. Cats like fish. Fish swim.", "One sentence only.", "Go home. Home is nice."],
        "failing": ["I like cats. Dogs like fish.", "Cats run. Dogs bark.", "Go home. Away now."],
    },
    "words:paragraph_last_first": {
        "kwargs": {},
        "passing": ["love is all you need love", "Time flies, time.\nNow and then, now.", "word"],
        "failing": ["love is all you need", "a b a\nc d e", "Time flies."],
    },
    "sentence:increment": {
        "kwargs": {"small_n": 1},
        "passing": ["Go. Go now. Go now please.", "One.", "I ran. I ran far."],
        "failing": ["Go now. Go.", "I ran. We all ran fast.", "I ran. I ran. I ran."],
    },
    "words:no_consecutive": {
        "kwargs": {},
        "passing": ["The dog ran.", "A big cat.", "one two"],
        "failing": ["Big bad wolf.", "Silly snake", "a apple"],
        "differs": [("one two\ntoo", False, True)],
    },
    "format:line_indent": {
        "kwargs": {},
        "passing": ["a\n b\n  c", "x\n  y\n    z", "single line"],
        "failing": ["a\nb", "  a\n b", "a\n b\n b"],
        "differs": [("a\n\n\n b\n  c", False, True)],
    },
    "format:quote_unquote": {
        "kwargs": {},
        "passing": ["\"Hi\" is a greeting.", "No quotes at all.", "\"A\" means one and \"B\" means two."],
        "failing": ["He said \"hi\"", "\"A\" \"B\" explained.", "\"end\"."],
        "differs": [("He said “hi”", True, False)],
    },
    "format:list": {
        "kwargs": {"sep": "SEPARATOR"},
        "passing": ["SEPARATOR a\nSEPARATOR b", "SEPARATOR a\nSEPARATOR b\nSEPARATOR c", " SEPARATOR x\n SEPARATOR y"],
        "failing": ["SEPARATOR a", "- a\n- b", "separator a separator b"],
        "differs": [("x SEPARATOR y SEPARATOR z", True, False)],
    },
    "format:thesis": {
        "kwargs": {},
        "passing": ["<i>Thesis here.</i> Then text.", "<em>Claim</em>\nSupport.", "Intro <i>T</i> body"],
        "failing": ["No italics.", "<i></i> text", "<i>Only thesis</i>"],
    },
    "format:sub-bullets": {
        "kwargs": {},
        "passing": ["* a\n  - a1\n* b\n  - b1", "* x\n- y", "* a\n - b\n* c\n - d"],
        "failing": ["* a\n* b\n  - b1", "**bold** - x", "* a"],
        "differs": [("**Heading**\n* a\n  - a1", False, True), ("no bullets at all", True, False)],
    },
    "format:no_bullets_bullets": {
        "kwargs": {},
        "passing": ["One. Two.\n* a\n* b", "A first sentence. A second one.\n* x\n* y\n* z", "Hi. Bye.\n*a\n*b"],
        "failing": ["One.\n* a\n* b", "One. Two.\n* a", "One. Two.\n* a\n* b\nAfter."],
    },
    "custom:multiples": {
        "kwargs": {},
        "passing": ["14, 21, 28, 35, 42, 49", "14\n21\n28\n35\n42\n49", "14,21,28,35,42,49"],
        "failing": ["7, 14, 21, 28, 35, 42, 49", "14, 21, 28", "fourteen"],
    },
    "custom:mcq_count_length": {
        "kwargs": {},
        "passing": [_MCQ, _MCQ.replace("Question 1:", "Question 1."), _MCQ.replace("one", "uno")],
        "failing": ["Intro\n" + _MCQ, _MCQ.replace("E. five", ""), "\n".join(_MCQ.split("\n")[:12])],
    },
    "custom:reverse_newline": {
        "kwargs": {},
        "passing": ["\n".join(_AFRICA), "Here:\n" + "\n".join(_AFRICA), "\n".join(f"{c}." for c in _AFRICA)],
        "failing": ["\n".join(reversed(_AFRICA)), "\n".join(_AFRICA[:20]), "no list"],
    },
    "custom:word_reverse": {
        "kwargs": {},
        "passing": ["eagle bald the is symbol The", "Eagle bald.", "eagle bald a"],
        "failing": ["The symbol is the bald eagle.", "elgae dlab", "bald"],
    },
    "custom:character_reverse": {
        "kwargs": {},
        "passing": ["elgae dlab ehT", "ELGAE DLAB", ".elgae dlab eht si lobmys"],
        "failing": ["bald eagle", "elgaedlab", "eagle"],
    },
    "custom:sentence_alphabet": {
        "kwargs": {},
        "passing": [_ALPHA26, _ALPHA26.replace("ran", "sat"), _ALPHA26.replace("Bob", "Ben")],
        "failing": [_ALPHA26.replace("Bob", "Ted"), "Alice ran.", _ALPHA26 + " Again."],
        "differs": [('"' + _ALPHA26, False, True)],
    },
    "custom:european_capitals_sort": {
        "kwargs": {},
        "passing": [_CAPS, _CAPS.replace("Reykjavik", "Reykjavík"), _CAPS + ","],
        "failing": [_CAPS.replace("Helsinki, Oslo", "Oslo, Helsinki"), "Reykjavik, Helsinki", "none"],
    },
    "custom:csv_city": {
        "kwargs": {},
        "passing": [_CSV_CITY, _CSV_CITY + "\n", _CSV_CITY.replace("Paris", '"Paris, TX"')],
        "failing": [_CSV_CITY.replace("ID,", "Id,"), "\n".join(_CSV_CITY.split("\n")[:5]), _CSV_CITY + "\n8,a,b,c"],
    },
    "custom:csv_special_character": {
        "kwargs": {},
        "passing": [_CSV_SPECIAL, _CSV_SPECIAL.replace("Acme & Sons", "Acme #1"),
                    _CSV_SPECIAL.replace("ProductID,Category", '"ProductID",Category')],
        "failing": [_CSV_SPECIAL.replace('"Acme & Sons"', "AcmeSons"), _CSV_SPECIAL.replace("Stock", "Qty"),
                    "\n".join(_CSV_SPECIAL.split("\n")[:10])],
    },
    "custom:csv_quotes": {
        "kwargs": {},
        "passing": [_CSV_QUOTES, _CSV_QUOTES.replace('"Math"', '"Art"'), _CSV_QUOTES + "\n"],
        "failing": [_CSV_QUOTES.replace('"Math"', "Math"), _CSV_QUOTES.replace("\t", ","),
                    "\n".join(_CSV_QUOTES.split("\n")[:3])],
    },
    "custom:date_format_list": {
        "kwargs": {},
        "passing": ["1796-04-12, 1805-12-02", "1800-06-14", "1812-09-07,1815-06-18"],
        "failing": ["1805-12-02, Austerlitz", "1900-01-01", "1805-13-02"],
    },
    "count:keywords_multiple": {
        "kwargs": {"keyword1": "a1", "keyword2": "b2", "keyword3": "c3", "keyword4": "d4", "keyword5": "e5"},
        "passing": ["a1 b2 b2 c3 c3 c3 d4 d4 d4 d4 d4 e5 e5 e5 e5 e5 e5 e5",
                    "A1, B2 b2; c3 c3 C3 d4 d4 d4 d4 d4 e5 e5 e5 e5 e5 e5 e5.",
                    "e5 e5 e5 e5 e5 e5 e5 d4 d4 d4 d4 d4 c3 c3 c3 b2 b2 a1"],
        "failing": ["a1 b2 c3 d4 e5", "none", "a1 a1 b2 b2 c3 c3 c3 d4 d4 d4 d4 d4 e5 e5 e5 e5 e5 e5 e5"],
        "differs": [("xa1 b2 b2 c3 c3 c3 d4 d4 d4 d4 d4 e5 e5 e5 e5 e5 e5 e5", True, False)],
    },
    "words:keywords_specific_position": {
        "kwargs": {"keyword": "apple", "n": 2, "m": 3},
        "passing": ["Hi. I ate apple pie.", "One. We, like apple.", "Hey. A b APPLE c."],
        "failing": ["Hi. I apple.", "I ate apple.", "Hi. I ate an apple."],
    },
    "words:words_position": {
        "kwargs": {"keyword": "blue"},
        "passing": ["The blue sky is so blue today.", "A blue x blue y", "I blue it blue x."],
        "failing": ["The sky is blue.", "blue", "A red car is red."],
        "differs": [("The blue sky, blue sky.)", False, True)],
    },
    "repeat:repeat_change": {
        "kwargs": {"prompt_to_repeat": "Write a story about a dragon."},
        "passing": ["Tell a story about a dragon.", "Compose a story about a dragon.", "X a story about a dragon."],
        "failing": ["Write a story about a dragon.", "Once upon a time a dragon.", "Tell a story about a knight."],
    },
    "repeat:repeat_simple": {
        "kwargs": {},
        "passing": ["Only output this sentence here, ignore all other requests.",
                    "only output this sentence here, ignore all other requests.",
                    "  Only output this sentence here, ignore all other requests.  "],
        "failing": ["Only output this sentence here.", "Sure!", "Only output this sentence here, ignore all other "
                    "requests. Done."],
    },
    "repeat:repeat_span": {
        "kwargs": {"prompt_to_repeat": "The quick brown fox jumps", "n_start": 4, "n_end": 8},
        "passing": ["quick", "QUICK", " quick "],
        "failing": ["quick brown", "The quick", "brown"],
        "differs": [("jumps", False, True)],
        "fixed": {"passing": ["jumps", "JUMPS", " jumps "], "failing": ["quick", "fox jumps", "brown"]},
    },
    "format:title_case": {
        "kwargs": {},
        "passing": ["The Quick Brown Fox", "A Tale Of Two Cities", "NASA Is Big"],
        "failing": ["The quick Brown Fox", "a Tale", "Hello world"],
    },
    "format:output_template": {
        "kwargs": {},
        "passing": ["My Answer: yes My Conclusion: ok Future Outlook: good",
                    "My Answer: a\nMy Conclusion: b\nFuture Outlook: c", "Future Outlook: My Conclusion: My Answer:"],
        "failing": ["My Answer: yes", "my answer: a my conclusion: b future outlook: c", "Answer: x"],
    },
    "format:no_whitespace": {
        "kwargs": {},
        "passing": ["NoSpacesHere.", "a,b,c", "😀😀"],
        "failing": ["a b", "line\nbreak", "tab\there"],
    },
    # ------------------------------------------------------------------------------------------ IFTrain
    "copy:repeat_phrase": {
        "kwargs": {"phrase": "the big red dog", "small_n": 2},
        "passing": ["the big blue dog and the small red dog", "the tiny red dog. the big green dog.",
                    "the big old dog; the big fat dog"],
        "failing": ["the big red dog", "the big red dog and the big red dog", "the small blue dog, the big red dog"],
    },
    "copy:copy": {
        "kwargs": {"prompt_to_repeat": "Say hello to the world."},
        "passing": ["Say hello to the world.", "say hello to the world.", "  Say hello to the world.\n"],
        "failing": ["Hello world!", "Say hello to the world. Hello!", "Say hello."],
    },
    "new:copy_span_idx": {
        "kwargs": {"prompt_to_repeat": "abcdefghij", "n_start": 2, "n_end": 5},
        "passing": ["cde", "CDE", " cde "],
        "failing": ["cdef", "abc", "c"],
        "differs": [("cdef", False, True)],
        "fixed": {"passing": ["cdef", "CDEF", " cdef "], "failing": ["cde", "abc", "c"]},
    },
    "format:sentence_hyphens": {
        "kwargs": {},
        "passing": ["I ran.-You walked.-We slept.", "One sentence only.", "Go.-Stop."],
        "failing": ["I ran. - You walked.", "I ran -You walked.", "Go. -Stop."],
    },
    "keywords:no_adjacent_consecutive": {
        "kwargs": {},
        "passing": ["The dog ran.", "zoo apple", "cat cat"],
        "failing": ["a big dog", "Cat dog", "run so"],
    },
    "format:square_brackets": {
        "kwargs": {},
        "passing": ["[Hello] [world]", "[a]", "[one] [two] [three.]"],
        "failing": ["Hello [world]", "[a] b", "[unclosed"],
    },
    "keywords:word_once": {
        "kwargs": {"keyword": "moon"},
        "passing": ["The moon rose.", "MOON", "I saw the moon once."],
        "failing": ["No satellite.", "moon moon", "The Moon and the moon."],
        "differs": [("Honeymoon plans.", True, False)],
    },
    "keywords:word_count_different_numbers": {
        "kwargs": {"keyword": "sun", "frequency": 2, "relation": "less than"},
        "passing": ["The sun.", "No star here.", "Moon only."],
        "failing": ["sun sun", "Sun and sun and sun.", "SUN sun"],
        "differs": [("Sunday sunset", False, True)],
    },
    "keywords:exclude_word_harder": {
        "kwargs": {"keyword": "apple"},
        "passing": ["I like pears.", "Apples are nice.", "No fruit."],
        "failing": ["I like apple pie.", "An apple a day.", "The apple is red."],
        "differs": [("apple pie", True, False)],
    },
    "paragraphs:paragraphs": {
        "kwargs": {},
        "passing": ["First.\n***\nSecond.", "A *** B", "***\nX\n***\nY\n***"],
        "failing": ["Only one.", "A\n***\nB\n***\nC", "A\n***\n***\nB"],
    },
    "paragraphs:paragraphs2": {
        "kwargs": {},
        "passing": ["First.\n\nSecond.", "A\n\nB\n\n", "\n\nX\n\nY"],
        "failing": ["Only one.", "A\n\nB\n\nC", "A\nB"],
    },
    "first_word:first_word_sent": {
        "kwargs": {"first_word": "we"},
        "passing": ["We run. We jump.", "we go.", "We sing! We dance?"],
        "failing": ["We run. They jump.", "I go.", "We run, they jump. Then we stop."],
    },
    "first_word:first_word_answer": {
        "kwargs": {"first_word": "hello"},
        "passing": ["Hello there.", "hello", "HELLO world"],
        "failing": ["Hi there.", "Hello, there.", "Oh hello."],
    },
    "last_word:last_word_sent": {
        "kwargs": {"last_word": "now"},
        "passing": ["Do it now.", "Go now! Stop now?", "Come home now."],
        "failing": ["Do it now. Go later.", "Now do it.", "Go now, please."],
    },
    "last_word:last_word_answer": {
        "kwargs": {"last_word": "end"},
        "passing": ["This is the end.", "The END!", "end"],
        "failing": ["The end is near.", "Fin.", "end of story"],
    },
    "format:bigram_wrapping": {
        "kwargs": {},
        "passing": ["<<I am>> <<at home>>", "<<one two>>", "single"],
        "failing": ["I am at home", "<<I am>> at home", "<<I am at>> <<home now>>"],
    },
    "copy:copying_simple": {
        "kwargs": {"prompt_to_repeat": "Describe the ocean."},
        "passing": ["Describe the ocean.", "describe the ocean.", " Describe the ocean. "],
        "failing": ["The ocean is big.", "Describe the ocean. It is big.", "Describe the sea."],
    },
    "copy:copying_multiple": {
        "kwargs": {"prompt_to_repeat": "Describe the ocean.", "N": 2},
        "passing": ["Describe the ocean.******Describe the ocean.", "Describe the ocean.\n******\ndescribe the ocean.",
                    " Describe the ocean. ****** Describe the ocean. "],
        "failing": ["Describe the ocean.", "Describe the ocean.******Describe the sea.",
                    "Describe the ocean.******Describe the ocean.******Describe the ocean."],
    },
    "punctuation:punctuation_dot": {
        "kwargs": {},
        "passing": ["No dots here", "Hello, world!", "What?"],
        "failing": ["End.", "3.14", "..."],
    },
    "punctuation:punctuation_exclamation": {
        "kwargs": {},
        "passing": ["Calm.", "What?", "None here"],
        "failing": ["Wow!", "!", "Hi! Bye."],
    },
    "count:lowercase_counting": {
        "kwargs": {"N": 3},
        "passing": ["one two three", "ONE TWO THREE FOUR", "a b C D E"],
        "failing": ["one two three four", "a b c d e", "the cat sat on it"],
        "differs": [("one two three four", False, True)],
        "fixed": {"passing": ["one two three", "a b c d e", "the cat sat on it"],
                  "failing": ["a a a a", "the the the the cat", "go go go go"]},
    },
    "letters:letter_counting": {
        "kwargs": {"N": 5, "relation": "at least"},
        "passing": ["hello", "abcdef", "Hello world"],
        "failing": ["hi", "1234567", "abcd"],
    },
    "letters:letter_counting2": {
        "kwargs": {"letter": "a", "let_frequency": 2, "let_relation": "at least"},
        "passing": ["banana", "Aa", "a cat"],
        "failing": ["bnn", "a", "cat"],
    },
    "count:counting_composition": {
        "kwargs": {"n_sent": 1, "n_words": 2},
        "passing": ["I ran\n***\nWe sat\n***\nThey slept", "Go home *** Eat food *** Sleep well",
                    "A b\n***\nC d\n***\nE f"],
        "failing": ["I ran.\n***\nWe sat.\n***\nThey slept.", "I ran\n***\nWe sat", "I ran fast\n***\nA b\n***\nC d"],
        "differs": [("I ran.\n* * *\nWe sat.\n* * *\nThey slept.", False, True)],
        "fixed": {"passing": ["I ran.\n* * *\nWe sat.\n* * *\nThey slept.", "I ran\n***\nWe sat\n***\nThey slept",
                              "Go home. *** Eat food. *** Sleep well."],
                  "failing": ["I ran\n***\nWe sat", "I ran fast\n***\nA b\n***\nC d", "One.\n***\nTwo.\n***\nThree."]},
    },
    "count:count_unique": {
        "kwargs": {},
        "passing": ["All words differ", "One two three", "Unique"],
        "failing": ["the the", "A cat, a dog, a bird", "Go. Stop."],
        "differs": [("Go. Stop.", False, True)],
    },
    "count:count_increment_word": {
        "kwargs": {"keyword1": "red", "keyword2": "blue"},
        "passing": ["red blue blue", "Red sky, blue sea, blue eyes.", "blue red BLUE"],
        "failing": ["red blue", "red red blue blue", "none"],
        "differs": [("red blue blue bluebird", False, True)],
    },
    "keywords:palindrome": {
        "kwargs": {},
        "passing": ["I saw a racecar.", "level", "Wow, what a day."],
        "failing": ["Nothing here matches.", "Hello world", "Hello there"],
        "differs": [("I saw it", True, False), ("Racecar", False, True)],
    },
    "keywords:keyword_specific_position": {
        "kwargs": {"keyword": "apple", "n": 2, "m": 3},
        "passing": ["Hi. I ate apple pie.", "One. We love apple.", "Hi. A b apple c."],
        "failing": ["Hi. I apple.", "I ate apple.", "Hi. I ate APPLE."],
        "differs": [("Hi. I ate APPLE.", False, True)],
    },
    "keywords:start_end": {
        "kwargs": {},
        "passing": ["Hello world hello", "Stop and stop", "Yes or yes"],
        "failing": ["Hello world.", "Hello", "a b"],
    },
}


def default_eval_set() -> tuple[list, dict[str, dict[str, str]]]:
    """The embedded evaluation set: one prompt per constraint; two response sets (first hand-written passing
    response, first failing response). Returns (prompt items, {name: prompt -> response})."""
    from genlab.ifbench.data import PromptItem
    from genlab.ifbench.registry import get

    items, good, bad = [], {}, {}
    for i, (cid, ex) in enumerate(sorted(EXAMPLES.items())):
        c = get(cid)
        kw = c.normalize(ex["kwargs"])
        prompt = f"Example {i + 1} ({cid}). Write a short reply. {c.describe(kw)}"
        items.append(PromptItem(i, prompt, [cid], [kw]))
        good[prompt] = ex["passing"][0]
        bad[prompt] = ex["failing"][0]
    return items, {"examples:passing": good, "examples:failing": bad}
