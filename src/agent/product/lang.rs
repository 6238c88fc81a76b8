//! What is particular to a language, as data: the one table the task's flow reads for the
//! words a task is phrased with, the words every sentence of the language is built with, how a
//! task names its unit, and the two questions the agent asks (docs/design.md §5).
//!
//! A task is read in the language whose sentence words it uses most ([`Lang::of`]); a task in
//! a language this table does not hold gets [`NEUTRAL`]: no question at all (the product's
//! numbered lines and the grammar carry the ask) and no word-based judgement of its text, so
//! no English word list decides anything about it. Adding a language is adding a row here.

/// A sorted list of distinct lowercase words, kept as one string with a space after each word
/// (`"each every one per "`, written with `words!`): one pointer for the list, where a slice
/// of `&str` held a pointer and a length per word, each relocated when the program loads (693
/// words in the table: 19.8 KB of the binary, docs/measurements.md, "Paying back").
#[derive(Clone, Copy)]
pub struct Words(&'static str);

/// A [`Words`] list from its words, in order: `words!["each", "every", "one", "per"]`.
macro_rules! words {
    ($($w:literal),* $(,)?) => {
        Words(concat!($($w, " "),*))
    };
}

impl Words {
    /// The words, in order.
    pub fn iter(self) -> impl Iterator<Item = &'static str> {
        self.0.split_terminator(' ')
    }

    /// Whether `word`, lowercased, is in the list (a binary search over the words).
    pub fn contains(self, word: &str) -> bool {
        let mut lower = crate::fixed::ArrayString::<LOOKUP_MAX_BYTES>::new();
        for c in word.chars().flat_map(char::to_lowercase) {
            if lower.push(c).is_err() {
                return false;
            }
        }
        self.has(lower.as_bytes())
    }

    /// Whether `word` is in the list, exactly. `lo..hi` is always a run of whole words, each
    /// with its space: `lo` starts a word (or is `hi`), `hi` follows a space (or is 0).
    fn has(self, word: &[u8]) -> bool {
        let text = self.0.as_bytes();
        let (mut lo, mut hi) = (0, text.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let space_before = text.get(lo..mid).and_then(|b| b.iter().rposition(|&c| c == b' '));
            let start = space_before.map_or(lo, |p| lo + p + 1);
            let end = text.get(start..hi).and_then(|b| b.iter().position(|&c| c == b' ')).map_or(hi, |p| start + p);
            match text.get(start..end).unwrap_or_default().cmp(word) {
                core::cmp::Ordering::Equal => return true,
                core::cmp::Ordering::Less => lo = end + 1,
                core::cmp::Ordering::Greater => hi = start,
            }
        }
        false
    }
}

/// Number words and their values as one string, `"one 1 two 2 "` (written with `numbers!`),
/// for the same reason as [`Words`].
#[derive(Clone, Copy)]
pub struct Numbers(&'static str);

/// A [`Numbers`] list from its pairs, in order: `numbers![("one", 1), ("two", 2)]`.
macro_rules! numbers {
    ($(($w:literal, $n:literal)),* $(,)?) => {
        Numbers(concat!($($w, " ", $n, " "),*))
    };
}

impl Numbers {
    /// The words and their values, in order.
    pub fn iter(self) -> impl Iterator<Item = (&'static str, u32)> {
        let mut parts = self.0.split_terminator(' ');
        core::iter::from_fn(move || Some((parts.next()?, parts.next()?.parse().ok()?)))
    }
}

/// One language's row. Every word list is lowercase and sorted (binary search; a test checks).
pub struct Lang {
    /// ISO 639-1 code, for the audit log and tests (`"en"`); `""` for [`NEUTRAL`].
    pub code: &'static str,
    /// Words every sentence of the language is built with: articles, prepositions,
    /// conjunctions, pronouns, auxiliaries. A text in the language holds some; a text made
    /// of none is no sentence of it.
    pub sentence_words: Words,
    /// Articles a name is cited with in the language ("der Mond", "la comète"): an outline's
    /// item that opens with one names what follows it ([`Lang::name_of`]). Empty where names
    /// are cited bare: an English item that opened with "the" was a definition crammed into the
    /// item (docs/measurements.md, "Names that hold sentence words").
    pub name_articles: Words,
    /// Words a task is phrased with that say nothing of its subject ("write", "list",
    /// "entry", "useful"): never product tags.
    pub task_words: Words,
    /// Words after which a task names its unit ("one tip per entry": `one`; "ein Eintrag pro
    /// Begriff": `pro`).
    pub unit_markers: Words,
    /// Words that name the entry itself, not the unit, after a marker ("per entry").
    pub entry_words: Words,
    /// Words that name the product itself, the task and its entries, in any form: a unit that
    /// holds one talks about the task, not its subject ("In this task, you will be asked to
    /// bake one batch of bread"). Only words that rarely name anything else: not "entrée" or
    /// "entrada", which are also dishes and tickets.
    pub product_words: Words,
    /// Words that join a unit to what it is a measure of, when a marker follows: "one piece of
    /// advice per entry" names the unit "piece of advice" (`of`).
    pub measure_of: Words,
    /// Units a reader numbers ("Day 3", "Paragraph 2"): their entries are labelled with the
    /// unit and its number, and what each is about follows the label.
    pub numbered_units: Words,
    /// Numbered units of a text a reader reads straight through, with no subject of their own
    /// ("Paragraph 3", "Stanza 2"): each goes on from the one before, and no outline plans
    /// them. Every one is in [`Lang::numbered_units`] too.
    pub running_units: Words,
    /// Units that are names, each with a text of its own ("term", "command"): an outline lists
    /// their names, a few words each, and a unit's text is asked for each (an item that may be a
    /// sentence turned a glossary into sentences about its domain: docs/measurements.md,
    /// "Outline items").
    pub named_units: Words,
    /// Words that join two phrases ("and"): the task's phrase for its units ends before one.
    pub joins: Words,
    /// The unit when the task names none.
    pub entry: &'static str,
    /// The label of the task's line at the head of the product.
    pub task_label: &'static str,
    /// What joins a numbered unit's plural to what the units make up, in an outline's heading
    /// ("Days" " of the " "one-week trip to Japan"); empty: the heading is the units alone.
    pub units_of: &'static str,
    /// The question for an outline, around the task's phrase for its units: `outline.0`, the
    /// phrase, `outline.1` ("Name five " tips for growing tomatoes at home "."). Asked to
    /// list "the next tips, a few words each", SmolLM2-135M copied the prompt's words
    /// ("one sentence", "one entry"; docs/measurements.md).
    pub outline: (&'static str, &'static str),
    /// The same for numbered units ("List what the next " days " are about, a few words each.").
    pub outline_numbered: (&'static str, &'static str),
    /// The question for one numbered unit about a subject: `unit_numbered.0`, its label,
    /// `unit_numbered.1`, the subject, `unit_numbered.2` ("Write " Day 3 ", about " Kyoto ".").
    pub unit_numbered: (&'static str, &'static str, &'static str),
    /// The question for one unit about a subject: `unit.0`, the unit, `unit.1`, the subject,
    /// `unit.2` ("Write the " tip " about " Use mulch ".").
    pub unit: (&'static str, &'static str, &'static str),
    /// The question for the next running unit ([`Lang::running_units`]), around its label:
    /// `unit_next.0`, the label, `unit_next.1` ("What happens next? Write " Paragraph 4 ".").
    pub unit_next: (&'static str, &'static str),
    /// What follows a running unit's label in the view, before the last sentence it ended
    /// with ("Paragraph 3" " ends: " "The storm broke at dawn.").
    pub ends: &'static str,
    /// What follows a running unit's label in the view, before the first sentence the
    /// product's oldest began with ("Paragraph 1" " begins: " "Eira came to the island.").
    pub begins: &'static str,
    /// The question for one unit that is a name with a text of its own (a term, a command),
    /// around its name: `unit_named.0`, the name, `unit_named.1` ("Say what " Nebula " is, in
    /// one sentence."). Asked to "Write the term about" a name, SmolLM2-135M defined fewer
    /// (docs/measurements.md, "A named unit's question").
    pub unit_named: (&'static str, &'static str),
    /// How the language writes a plural of a unit the task did not write in the plural.
    pub plural: Plural,
    /// Number words a task counts its units with ("five tips", "a five-day trip").
    pub numbers: Numbers,
    /// Spans counted in another unit: ("week", "day", 7) reads "a one-week trip, one day per
    /// entry" as seven days.
    pub spans: &'static [(&'static str, &'static str, u32)],
}

/// A plural rule, for a unit the task writes only in the singular.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Plural {
    /// English: `-s`, `-es` after a sibilant, `-ies` after a consonant and `y`.
    English,
    /// Add `-s` unless the word ends with one (French, Spanish).
    S,
    /// Leave the word as it is (German nouns have no one rule; the task's own plural is used
    /// where it has one).
    Same,
}

/// English.
pub const EN: Lang = Lang {
    code: "en",
    sentence_words: words![
        "a", "about", "after", "against", "all", "also", "among", "an", "and", "any", "are", "as", "at", "be",
        "because", "been", "before", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does",
        "during", "each", "every", "for", "from", "had", "has", "have", "he", "her", "his", "how", "if", "in", "into",
        "is", "it", "its", "may", "more", "most", "must", "no", "not", "of", "on", "one", "onto", "or", "other", "our",
        "over", "per", "she", "should", "so", "some", "such", "than", "that", "the", "their", "them", "then", "there",
        "these", "they", "this", "those", "through", "to", "under", "until", "up", "upon", "was", "we", "were", "when",
        "where", "whether", "which", "while", "who", "will", "with", "within", "without", "would", "you", "your",
    ],
    name_articles: words![],
    task_words: words![
        "add",
        "basic",
        "brief",
        "build",
        "collect",
        "common",
        "compile",
        "create",
        "definition",
        "easy",
        "entries",
        "entry",
        "every",
        "famous",
        "few",
        "fun",
        "give",
        "good",
        "helpful",
        "important",
        "interesting",
        "keep",
        "list",
        "make",
        "memory",
        "new",
        "next",
        "own",
        "per",
        "practical",
        "quick",
        "save",
        "sentence",
        "short",
        "simple",
        "small",
        "storage",
        "store",
        "tag",
        "tagged",
        "tags",
        "useful",
        "what",
        "write",
    ],
    unit_markers: words!["each", "every", "one", "per"],
    entry_words: words!["entry", "item", "line", "record"],
    product_words: words!["entries", "entry", "task", "tasks"],
    measure_of: words!["of"],
    numbered_units: words![
        "chapter",
        "day",
        "lesson",
        "paragraph",
        "part",
        "scene",
        "stage",
        "stanza",
        "step",
        "verse",
        "week",
    ],
    running_units: words!["chapter", "paragraph", "scene", "stanza", "verse"],
    named_units: words!["command", "concept", "name", "term", "word"],
    joins: words!["and", "or"],
    entry: "entry",
    task_label: "Task",
    units_of: " of the ",
    outline: ("Name five ", "."),
    outline_numbered: ("List what the next ", " are about, a few words each."),
    unit_numbered: ("Write ", ", about ", "."),
    unit: ("Write the ", " about ", "."),
    unit_named: ("Say what ", " is, in one sentence."),
    unit_next: ("What happens next? Write ", "."),
    ends: " ends: ",
    begins: " begins: ",
    plural: Plural::English,
    numbers: numbers![
        ("one", 1),
        ("two", 2),
        ("three", 3),
        ("four", 4),
        ("five", 5),
        ("six", 6),
        ("seven", 7),
        ("eight", 8),
        ("nine", 9),
        ("ten", 10),
        ("eleven", 11),
        ("twelve", 12),
    ],
    spans: &[("week", "day", 7), ("fortnight", "day", 14)],
};

/// German.
pub const DE: Lang = Lang {
    code: "de",
    sentence_words: words![
        "aber", "alle", "als", "am", "an", "auch", "auf", "aus", "bei", "beim", "bis", "damit", "dann", "darf", "das",
        "dass", "dem", "den", "denn", "der", "des", "die", "diese", "diesem", "diesen", "dieser", "dieses", "doch",
        "durch", "ein", "eine", "einem", "einen", "einer", "eines", "er", "es", "für", "gegen", "haben", "hat", "ihr",
        "ihre", "ihrem", "ihren", "ihrer", "im", "in", "ins", "ist", "jede", "jedem", "jeden", "kann", "kein", "keine",
        "können", "mit", "muss", "nach", "nicht", "nur", "ob", "oder", "ohne", "sein", "seine", "seinem", "seinen",
        "seiner", "sich", "sie", "sind", "sollte", "um", "und", "unter", "vom", "von", "vor", "weil", "wenn", "werden",
        "wie", "wir", "wird", "wurde", "während", "zu", "zum", "zur", "zwischen", "über",
    ],
    name_articles: words!["das", "der", "die"],
    task_words: words![
        "definition",
        "eintrag",
        "eintrags",
        "einträge",
        "erstelle",
        "erstellen",
        "jeder",
        "jedes",
        "kurze",
        "kurzen",
        "liste",
        "nützliche",
        "pro",
        "sammle",
        "satz",
        "schreibe",
        "schreiben",
        "speicher",
    ],
    unit_markers: words!["je", "jeder", "jedes", "pro"],
    entry_words: words!["eintrag", "zeile"],
    product_words: words!["aufgabe", "aufgaben", "eintrag", "einträge"],
    measure_of: words![],
    numbered_units: words!["absatz", "kapitel", "schritt", "strophe", "szene", "tag", "teil", "woche"],
    running_units: words!["absatz", "kapitel", "strophe", "szene"],
    named_units: words!["befehl", "begriff", "name", "wort"],
    joins: words!["oder", "und"],
    entry: "Eintrag",
    task_label: "Aufgabe",
    units_of: "",
    outline: ("Nenne fünf ", "."),
    outline_numbered: ("Nenne, worum es in den nächsten ", " geht, je in wenigen Worten."),
    unit_numbered: ("Schreibe ", " über ", "."),
    unit: ("Schreibe den ", " über ", "."),
    unit_named: ("Sag, was ", " ist, in einem Satz."),
    unit_next: ("Wie geht es weiter? Schreibe ", "."),
    ends: " endet: ",
    begins: " beginnt: ",
    plural: Plural::Same,
    numbers: numbers![
        ("ein", 1),
        ("eine", 1),
        ("eins", 1),
        ("zwei", 2),
        ("drei", 3),
        ("vier", 4),
        ("fünf", 5),
        ("sechs", 6),
        ("sieben", 7),
        ("acht", 8),
        ("neun", 9),
        ("zehn", 10),
        ("elf", 11),
        ("zwölf", 12),
    ],
    spans: &[("woche", "tag", 7)],
};

/// French.
pub const FR: Lang = Lang {
    code: "fr",
    sentence_words: words![
        "après", "au", "aussi", "aux", "avant", "avec", "ce", "ces", "cette", "chez", "comme", "dans", "de", "des",
        "dont", "du", "elle", "elles", "en", "entre", "est", "et", "il", "ils", "je", "la", "le", "les", "leur",
        "leurs", "lors", "mais", "mes", "mon", "même", "ne", "nos", "notre", "nous", "on", "ou", "où", "par", "pas",
        "pendant", "peut", "plus", "pour", "qu", "quand", "que", "qui", "sa", "sans", "se", "ses", "si", "son", "sont",
        "sous", "sur", "tous", "toute", "toutes", "très", "tu", "un", "une", "vers", "vos", "votre", "vous", "à",
        "être",
    ],
    name_articles: words!["l", "la", "le", "les"],
    task_words: words![
        "chaque",
        "courte",
        "crée",
        "créer",
        "définition",
        "entrée",
        "entrées",
        "liste",
        "par",
        "phrase",
        "pratiques",
        "rédige",
        "utiles",
        "écris",
    ],
    unit_markers: words!["chaque", "par"],
    entry_words: words!["entrée", "ligne"],
    product_words: words!["tâche", "tâches"],
    measure_of: words!["de"],
    numbered_units: words!["chapitre", "jour", "paragraphe", "partie", "scène", "semaine", "strophe", "étape"],
    running_units: words!["chapitre", "paragraphe", "scène", "strophe"],
    named_units: words!["commande", "concept", "mot", "nom", "terme"],
    joins: words!["et", "ou"],
    entry: "entrée",
    task_label: "Tâche",
    units_of: "",
    outline: ("Nomme cinq ", "."),
    outline_numbered: ("Liste de quoi parlent les prochains ", ", en quelques mots chacun."),
    unit_numbered: ("Écris ", " sur ", "."),
    unit: ("Écris le ", " sur ", "."),
    unit_named: ("Dis ce qu'est ", ", en une phrase."),
    unit_next: ("Que se passe-t-il ensuite ? Écris ", "."),
    ends: " se termine : ",
    begins: " commence : ",
    plural: Plural::S,
    numbers: numbers![
        ("un", 1),
        ("une", 1),
        ("deux", 2),
        ("trois", 3),
        ("quatre", 4),
        ("cinq", 5),
        ("six", 6),
        ("sept", 7),
        ("huit", 8),
        ("neuf", 9),
        ("dix", 10),
        ("onze", 11),
        ("douze", 12),
    ],
    spans: &[("semaine", "jour", 7)],
};

/// Spanish.
pub const ES: Lang = Lang {
    code: "es",
    sentence_words: words![
        "a", "al", "ante", "aunque", "bajo", "como", "con", "cuando", "de", "del", "desde", "donde", "durante", "el",
        "ella", "ellos", "en", "entre", "era", "es", "esa", "ese", "eso", "esta", "estas", "este", "esto", "estos",
        "está", "fue", "ha", "han", "hasta", "hay", "la", "las", "le", "les", "lo", "los", "mi", "mis", "muy", "más",
        "ni", "no", "nos", "nuestro", "o", "para", "pero", "por", "porque", "puede", "que", "se", "si", "sin", "sobre",
        "son", "su", "sus", "también", "te", "tiene", "todos", "tu", "tus", "un", "una", "usted", "y", "yo", "él",
    ],
    name_articles: words!["el", "la", "las", "los"],
    task_words: words![
        "cada",
        "crea",
        "crear",
        "definición",
        "entrada",
        "entradas",
        "escribe",
        "frase",
        "lista",
        "por",
        "prácticos",
        "útiles",
    ],
    unit_markers: words!["cada", "por"],
    entry_words: words!["entrada", "línea"],
    product_words: words!["tarea", "tareas"],
    measure_of: words!["de"],
    numbered_units: words!["capítulo", "día", "escena", "estrofa", "parte", "paso", "párrafo", "semana"],
    running_units: words!["capítulo", "escena", "estrofa", "párrafo"],
    named_units: words!["comando", "concepto", "nombre", "palabra", "término"],
    joins: words!["o", "y"],
    entry: "entrada",
    task_label: "Tarea",
    units_of: "",
    outline: ("Nombra cinco ", "."),
    outline_numbered: ("Enumera de qué tratan los siguientes ", ", en pocas palabras cada uno."),
    unit_numbered: ("Escribe ", " sobre ", "."),
    unit: ("Escribe el ", " sobre ", "."),
    unit_named: ("Di qué es ", ", en una frase."),
    unit_next: ("¿Qué pasa después? Escribe ", "."),
    ends: " termina: ",
    begins: " empieza: ",
    plural: Plural::S,
    numbers: numbers![
        ("uno", 1),
        ("una", 1),
        ("dos", 2),
        ("tres", 3),
        ("cuatro", 4),
        ("cinco", 5),
        ("seis", 6),
        ("siete", 7),
        ("ocho", 8),
        ("nueve", 9),
        ("diez", 10),
        ("once", 11),
        ("doce", 12),
    ],
    spans: &[("semana", "día", 7)],
};

/// A language this table does not hold: no words, no questions.
pub const NEUTRAL: Lang = Lang {
    code: "",
    sentence_words: words![],
    name_articles: words![],
    task_words: words![],
    unit_markers: words![],
    entry_words: words![],
    product_words: words![],
    measure_of: words![],
    numbered_units: words![],
    running_units: words![],
    named_units: words![],
    joins: words![],
    entry: "",
    task_label: "",
    units_of: "",
    outline: ("", ""),
    outline_numbered: ("", ""),
    unit_numbered: ("", "", ""),
    unit: ("", "", ""),
    unit_named: ("", ""),
    unit_next: ("", ""),
    ends: "",
    begins: "",
    plural: Plural::Same,
    numbers: numbers![],
    spans: &[],
};

/// Every language of the table.
pub const ALL: [&Lang; 4] = [&EN, &DE, &FR, &ES];

/// Fewest sentence words a task must use for its language to be read as one of the table's: a
/// short task may have one ("Collect interesting facts about honeybees."), and a word two rows
/// share tells neither ([`Lang::of`]).
const DETECT_MIN: usize = 1;

impl Lang {
    /// The language `text` is written in: the row whose sentence words it uses most (at least
    /// `DETECT_MIN` of them, and more than any other row), else [`NEUTRAL`].
    pub fn of(text: &str) -> &'static Lang {
        let mut best: (&'static Lang, usize) = (&NEUTRAL, 0);
        let mut tie = false;
        for lang in ALL {
            let n = words(text).filter(|w| lang.is_sentence_word(w)).count();
            if n > best.1 {
                best = (lang, n);
                tie = false;
            } else if n == best.1 && n > 0 {
                tie = true;
            }
        }
        if best.1 < DETECT_MIN || tie {
            &NEUTRAL
        } else {
            best.0
        }
    }

    /// Whether this row has questions to ask (not [`NEUTRAL`]).
    pub fn asks(&self) -> bool {
        !self.code.is_empty()
    }

    /// Whether `word` (any case) is one of the sentence words.
    pub fn is_sentence_word(&self, word: &str) -> bool {
        self.sentence_words.contains(word)
    }

    /// The name an outline's item cites: the item, or what follows its article
    /// ([`Lang::name_articles`]: "Der Mond" names "Mond", "L'étoile" "étoile"); the item whole
    /// when nothing follows the article.
    pub fn name_of<'t>(&self, item: &'t str) -> &'t str {
        let item = item.trim();
        let Some(first) = words(item).next() else { return item };
        if !self.name_articles.contains(first) || !item.starts_with(first) {
            return item;
        }
        let rest = item[first.len()..].trim_start_matches(|c: char| !c.is_alphanumeric());
        if rest.is_empty() {
            item
        } else {
            rest
        }
    }

    /// Whether `word` (any case) is a word tasks are phrased with, or a sentence word.
    pub fn is_task_word(&self, word: &str) -> bool {
        self.task_words.contains(word) || self.sentence_words.contains(word)
    }

    /// Whether `word` (any case) names the product itself ([`Lang::product_words`]).
    pub fn is_product_word(&self, word: &str) -> bool {
        self.product_words.contains(word)
    }

    /// Whether `word` (any case) marks the unit that follows it.
    pub fn is_unit_marker(&self, word: &str) -> bool {
        self.unit_markers.contains(word)
    }

    /// Whether `word` (any case) joins two phrases.
    pub fn is_join(&self, word: &str) -> bool {
        self.joins.contains(word)
    }

    /// Whether `word` (any case) names the entry itself.
    pub fn is_entry_word(&self, word: &str) -> bool {
        self.entry_words.contains(word)
    }

    /// Whether `word` (any case) joins a unit to what it is a measure of.
    pub fn is_measure_of(&self, word: &str) -> bool {
        self.measure_of.contains(word)
    }

    /// Whether `unit` (any case) is numbered by a reader.
    pub fn is_numbered(&self, unit: &str) -> bool {
        self.numbered_units.contains(unit)
    }

    /// Whether `word` (any case) is a word of one of the questions the agent asks of a unit
    /// ("Wie geht es weiter? Schreibe ..."): a text made of them copies the prompt.
    pub fn in_question(&self, word: &str) -> bool {
        let asked = [
            self.unit_next.0,
            self.unit_next.1,
            self.unit_numbered.0,
            self.unit_numbered.1,
            self.unit.0,
            self.unit.1,
            self.unit_named.0,
            self.unit_named.1,
        ];
        let lower = |w: &str| w.chars().flat_map(char::to_lowercase).eq(word.chars().flat_map(char::to_lowercase));
        asked.iter().any(|q| words(q).any(lower))
    }

    /// Whether `unit` (any case) is a running unit: numbered, with no subject of its own.
    pub fn is_running(&self, unit: &str) -> bool {
        self.running_units.contains(unit)
    }

    /// Whether `unit` (singular, any case) is a name with a text of its own.
    pub fn is_named(&self, unit: &str) -> bool {
        self.named_units.contains(unit)
    }
}

/// Longest word looked up in a list, in bytes: longer ones are in no list.
const LOOKUP_MAX_BYTES: usize = 32;

/// The words of `text`: runs of letters and digits (any script), split at everything else.
pub fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_list_is_sorted_lowercase_and_distinct() {
        for lang in ALL {
            for list in [
                lang.sentence_words,
                lang.task_words,
                lang.unit_markers,
                lang.entry_words,
                lang.product_words,
                lang.measure_of,
                lang.numbered_units,
                lang.running_units,
                lang.named_units,
            ] {
                assert!(list.0.is_empty() || list.0.ends_with(' '), "{}: {:?}", lang.code, list.0);
                let list: Vec<&str> = list.iter().collect();
                for pair in list.windows(2) {
                    assert!(pair[0] < pair[1], "{}: {:?} before {:?}", lang.code, pair[0], pair[1]);
                }
                for w in &list {
                    assert!(!w.is_empty(), "{}: two spaces in a row", lang.code);
                    assert_eq!(w.to_lowercase(), *w, "{}: {w}", lang.code);
                    assert!(w.len() <= LOOKUP_MAX_BYTES);
                }
            }
        }
    }

    #[test]
    fn every_running_unit_is_numbered() {
        for lang in ALL {
            for unit in lang.running_units.iter() {
                assert!(lang.is_numbered(unit), "{}: {unit}", lang.code);
            }
            assert!(lang.running_units.iter().next().is_some(), "{}", lang.code);
        }
    }

    #[test]
    fn a_word_is_found_exactly_when_listed() {
        let lists = ALL.iter().flat_map(|l| [l.sentence_words, l.task_words, l.numbered_units, l.joins]);
        for list in lists.chain([words![], words!["one"], words!["a", "b"], words!["a", "b", "c"]]) {
            let listed: Vec<&str> = list.iter().collect();
            let mut probes = vec![String::new(), "0".to_string(), "zzzz".to_string(), "a b".to_string()];
            for w in &listed {
                probes.extend([w.to_string(), w.to_uppercase(), format!("{w}s"), format!(" {w}"), format!("{w} ")]);
                probes.extend(w.char_indices().skip(1).map(|(i, _)| w[..i].to_string()));
            }
            for p in &probes {
                let want = listed.contains(&p.to_lowercase().as_str());
                assert_eq!(list.contains(p), want, "{:?} in {:?}", p, list.0);
            }
        }
    }

    #[test]
    fn every_number_word_reads_whole() {
        for lang in ALL {
            let n = lang.numbers.0.split_terminator(' ').count();
            assert_eq!(lang.numbers.iter().count() * 2, n, "{}: {:?}", lang.code, lang.numbers.0);
            assert!(lang.numbers.iter().all(|(w, v)| !w.is_empty() && (1..=100).contains(&v)), "{}", lang.code);
        }
        assert_eq!(EN.numbers.iter().find(|(w, _)| *w == "twelve"), Some(("twelve", 12)));
        assert_eq!(DE.numbers.iter().filter(|&(_, v)| v == 1).count(), 3);
    }

    #[test]
    fn a_task_is_read_in_its_own_language() {
        let cases = [
            ("Write practical tips for growing tomatoes at home, one tip per entry.", "en"),
            ("Erstelle ein Glossar der Astronomie-Begriffe: ein Eintrag pro Begriff, mit einer Definition.", "de"),
            ("Écris des conseils pour cultiver des tomates, un conseil par entrée.", "fr"),
            ("Escribe consejos para cultivar tomates en casa, un consejo por entrada.", "es"),
            ("天文学の用語集を作成してください。", ""),
            ("", ""),
            ("Tomatoes", ""),
            // One sentence word, of one row only.
            ("Collect interesting facts about honeybees.", "en"),
            ("Sammle Fakten über die Honigbiene.", "de"),
            // One word two rows share ("en": French and Spanish) tells neither.
            ("Recetas en cocina", ""),
        ];
        for (task, code) in cases {
            assert_eq!(Lang::of(task).code, code, "{task}");
        }
    }
}
