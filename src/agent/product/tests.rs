//! The product's flow on real stores in temporary directories. The whole file is compiled for
//! tests only (`#[cfg(test)] mod tests;` in `mod.rs`), and says so itself too.
#![cfg(test)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use super::*;
use crate::limits::PRODUCT_VIEW_MAX_BYTES;
use crate::memory::working::WorkingSet;

fn working(task: &str) -> WorkingSet {
    let mut w = WorkingSet::new();
    if !task.is_empty() {
        w.add(&normalize(TASK_KEY).unwrap(), task, 1).unwrap();
    }
    w
}

fn store(label: &str) -> (std::path::PathBuf, Store) {
    let dir = crate::testing::temp_dir(label);
    let s = Store::open_with_capacity(&dir, 1024).unwrap();
    (dir, s)
}

/// Working memory with `task` and the plan `plan`, added at `now`.
fn with_plan(task: &str, plan: &str, now: u64) -> WorkingSet {
    let mut w = working(task);
    w.add(&normalize(PLAN_KEY).unwrap(), plan, now).unwrap();
    w
}

/// Renders the view of `task` and returns it with the ask's question.
fn view(p: &mut Product, w: &WorkingSet, s: &mut Store, task: &str) -> (String, String) {
    p.refresh(w, Some(s));
    let mut out = FixedBuf::with_capacity("view", crate::limits::PROMPT_MAX_BYTES);
    p.render(task, s, &mut out, PRODUCT_VIEW_MAX_BYTES).unwrap();
    let mut q = FixedBuf::with_capacity("question", 4096);
    p.write_question(p.ask(), &mut q).unwrap();
    (out.text().unwrap().to_string(), q.text().unwrap().to_string())
}

/// The units the last outline left to write, oldest first ([`Product::next_unit`]).
fn next_units(p: &mut Product) -> Vec<String> {
    let mut unit = ArrayString::new();
    let mut units = Vec::new();
    while p.next_unit(&mut unit) {
        units.push(unit.as_str().to_string());
    }
    units
}

const TIPS: &str = "Write practical tips for growing tomatoes at home, one tip per entry.";

/// The verdict on `value`, a save of the product's unit filed as the agent files it.
fn judge(p: &Product, value: &str) -> Verdict {
    p.judge(&p.file(p.key().unwrap(), value).unwrap().unwrap(), value)
}

/// Saves `value` as the product's unit, as the agent files it.
fn save(p: &Product, s: &mut Store, value: &str) -> Key {
    let key = p.file(p.key().unwrap(), value).unwrap().unwrap();
    s.put(&key, value, 1).unwrap();
    key
}

#[test]
fn any_task_text_is_shown_whole_and_the_view_stays_within_its_bounds() {
    let mut r = crate::testing::rng::Rng(0x9E37);
    let mut below = |n: u64| r.next() % n;
    let (_d, mut s) = store("product-any");
    let mut p = Product::new();
    let fixed = [
        String::new(),
        "Erstelle ein Glossar der Astronomie-Begriffe: ein Eintrag pro Begriff.".to_string(),
        "日本の一週間の旅行を計画してください。一日一項目。".to_string(),
        "x".repeat(4096),
        "é".repeat(2048),
    ];
    for round in 0..60 {
        let task = match fixed.get(round) {
            Some(t) => t.clone(),
            None => {
                let len = below(4097) as usize;
                (0..len).map(|_| char::from_u32(below(0x3100) as u32).unwrap_or(' ')).collect::<String>()
            }
        };
        let w = working(&task);
        let (v, q) = view(&mut p, &w, &mut s, &task);
        if task.trim().is_empty() {
            assert!(v.is_empty() && !p.active(), "no task, no product");
            continue;
        }
        assert!(v.starts_with("<product>\n") && v.ends_with("</product>\n"), "{v}");
        assert!(v.contains(task.trim()), "the task is shown as written");
        assert!(v.len() <= task.len() + PRODUCT_VIEW_MAX_BYTES + 64, "{}", v.len());
        assert!(q.len() < 512, "{q}");
        // Save a few units under the product and render again: still within bounds.
        for i in 0..3 {
            let value = format!("Subject {round} {i}: a unit with a few words in it.");
            if let Ok(Some(key)) = p.file(p.key().unwrap(), &value) {
                s.put(&key, &value, 1).unwrap();
            }
        }
        let (v, _) = view(&mut p, &w, &mut s, &task);
        assert!(v.len() <= task.len() + PRODUCT_VIEW_MAX_BYTES + 64, "{}", v.len());
    }
}

#[test]
fn the_task_reads_its_questions_in_its_own_language() {
    let (_d, mut s) = store("product-lang");
    let cases = [
        (TIPS, "Name five tips for growing tomatoes at home.\n"),
        ("Plan a one-week trip to Japan, one day per entry.", "List what the next days are about, a few words each.\n"),
        ("Erstelle ein Glossar der Astronomie-Begriffe: ein Eintrag pro Begriff.", "Nenne fünf Astronomie-Begriffe.\n"),
        ("日本の一週間の旅行を計画してください。", ""),
    ];
    for (task, question) in cases {
        let mut p = Product::new();
        let (_, q) = view(&mut p, &working(task), &mut s, task);
        assert_eq!(q, question, "{task}");
    }
}

#[test]
fn an_outline_plans_new_subjects_then_each_is_asked_for_once() {
    let (_d, mut s) = store("product-flow");
    let mut p = Product::new();
    let mut w = working(TIPS);
    let (v, _) = view(&mut p, &w, &mut s, TIPS);
    assert_eq!(v, format!("<product>\n{TIPS}\n</product>\n"));
    let ProductAsk::Outline { prefix, first, .. } = p.ask() else { panic!("an outline first") };
    assert_eq!((prefix, first), ("Tips for growing tomatoes at home:\n1. ", 1));
    // The model's outline: one subject copied from the task, one cut off, one twice.
    let plan = "Tips for growing tomatoes at home:\n1. Water regularly\n2. Tomatoes\n3. Use mulch\n4. Plant them in\n5. water  regularly\n6. Prune the suckers";
    w.add(&normalize(PLAN_KEY).unwrap(), plan, 2).unwrap();
    let mut scratch = FixedBuf::with_capacity("plan", 4096);
    p.settle(&mut w, &mut scratch, 2, "").unwrap();
    assert_eq!(w.get(&normalize(PLAN_KEY).unwrap()), Some("Water regularly\nUse mulch\nPrune the suckers"));
    let mut asked = Vec::new();
    for _ in 0..3 {
        let (_, q) = view(&mut p, &w, &mut s, TIPS);
        let ProductAsk::Unit { head, .. } = p.ask() else { panic!("a unit: {q}") };
        asked.push(head.to_string());
        assert_eq!(q, format!("Write the tip about {head}.\n"));
        save(&p, &mut s, &format!("{head}: Give the plants what they need every day."));
        p.settle(&mut w, &mut scratch, 3, "").unwrap();
    }
    assert_eq!(asked, ["Water regularly", "Use mulch", "Prune the suckers"]);
    // All asked: the next is an outline again, going on from the first two subjects, and a
    // stored subject it names again is not planned.
    let (v, _) = view(&mut p, &w, &mut s, TIPS);
    assert!(v.ends_with("Water regularly\nUse mulch\nPrune the suckers\n</product>\n"), "{v}");
    let ProductAsk::Outline { prefix, first, .. } = p.ask() else { panic!("an outline again") };
    assert_eq!((prefix, first), ("Tips for growing tomatoes at home:\n1. Water regularly\n2. Use mulch\n3. ", 3));
    let plan = "Tips for growing tomatoes at home:\n1. Water regularly\n2. Use mulch\n3. Prune the suckers\n4. Stake the plants";
    w.add(&normalize(PLAN_KEY).unwrap(), plan, 4).unwrap();
    p.settle(&mut w, &mut scratch, 4, "").unwrap();
    assert_eq!(w.get(&normalize(PLAN_KEY).unwrap()), Some("Stake the plants"));
}

#[test]
fn an_outlines_sentences_are_units_saved_as_written_and_its_short_items_are_planned() {
    let (_d, mut s) = store("product-sentences");
    let mut p = Product::new();
    let mut w = working(TIPS);
    view(&mut p, &w, &mut s, TIPS);
    // Two sentences, a subject, a phrase cut off, one in run-on letters, one of the task's own
    // words, a string of names, a sentence the bound cut (as many words as the grammar allows)
    // and one that ends within it.
    let plan = "Tips for growing tomatoes at home:\n1. Mulch around the plants to keep the soil moist.\n\
                2. Use mulch\n3. Water the plants deeply once a week in the morning.\n\
                4. Plant the seedlings deep so that the\n5. Choose a sunny spot for thembbbbbb all day\n\
                6. Practical tips for growing tomatoes at home\n\
                7. Soil, water, sun, compost, mulch and stakes for every plant\n\
                8. One of the most useful things you can do for your plants is to water them deeply at the base.\n\
                9. Tie the stems to a stake as they grow, so the fruit does not pull them down.";
    w.add(&normalize(PLAN_KEY).unwrap(), plan, 2).unwrap();
    let mut scratch = FixedBuf::with_capacity("plan", 4096);
    p.settle(&mut w, &mut scratch, 2, "").unwrap();
    assert_eq!(w.get(&normalize(PLAN_KEY).unwrap()), Some("Use mulch"));
    let units = next_units(&mut p);
    assert_eq!(
        units,
        [
            "Mulch around the plants to keep the soil moist.",
            "Water the plants deeply once a week in the morning.",
            "Tie the stems to a stake as they grow, so the fruit does not pull them down."
        ]
    );
    // Each is filed under its first words and judged as a unit of its own.
    let key = p.file(p.key().unwrap(), &units[0]).unwrap().unwrap();
    assert_eq!(key, normalize("tips,tomatoes,mulch_around_the_plants_to_keep_the_soil").unwrap());
    assert_eq!(p.judge(&key, &units[0]), Verdict::New);
    s.put(&key, &units[0], 2).unwrap();
    p.saved(&units[0]);
    let again = "Mulch around the plants to keep the soil moist and cool.";
    let key = p.file(p.key().unwrap(), again).unwrap().unwrap();
    assert!(matches!(p.judge(&key, again), Verdict::Repeat(_)));
    // Out of the view too, the store's most relevant entries tell a repeat.
    assert!(p.repeats_stored(&mut s, again));
    assert!(!p.repeats_stored(&mut s, "Stake the plants early so the stems grow straight and strong."));
    // The next outline goes on from the stored sentence; a numbered task labels its sentences.
    w.remove(&normalize(PLAN_KEY).unwrap());
    let (v, _) = view(&mut p, &w, &mut s, TIPS);
    assert!(v.ends_with("Mulch around the plants to keep the soil moist.\n</product>\n"), "{v}");
    let ProductAsk::Outline { prefix, .. } = p.ask() else { panic!("an outline") };
    assert!(prefix.ends_with(":\n1. Mulch around the plants to keep the soil moist.\n2. "), "{prefix}");
    let (_d2, mut s2) = store("product-sentences-numbered");
    let task = "Plan a one-week trip to Japan, one day per entry.";
    let mut w = working(task);
    view(&mut p, &w, &mut s2, task);
    w.add(&normalize(PLAN_KEY).unwrap(), "Days:\n1. Arrive in Tokyo and walk through the old streets of Asakusa.", 3)
        .unwrap();
    p.settle(&mut w, &mut scratch, 3, "").unwrap();
    let mut unit = ArrayString::new();
    assert!(p.next_unit(&mut unit));
    assert_eq!(unit.as_str(), "Day 1 – Arrive in Tokyo and walk through the old streets of Asakusa.");
    let key = p.file(p.key().unwrap(), unit.as_str()).unwrap().unwrap();
    assert_eq!(p.judge(&key, unit.as_str()), Verdict::New);
}

#[test]
fn an_outline_of_names_lists_a_few_words_an_item_and_one_of_other_units_sentences() {
    let (_d, mut s) = store("product-named");
    let mut p = Product::new();
    for (task, words) in [
        ("Build a glossary of astronomy terms, one entry per term, with a one-sentence definition.", 4),
        ("List common Linux shell commands and what each does.", 4),
        ("Erstelle ein Glossar der Astronomie: ein Eintrag pro Begriff.", 4),
        (TIPS, crate::limits::GRAMMAR_OUTLINE_ITEM_MAX_WORDS),
        ("Collect useful facts about the planets of the solar system.", crate::limits::GRAMMAR_OUTLINE_ITEM_MAX_WORDS),
    ] {
        let w = working(task);
        view(&mut p, &w, &mut s, task);
        let ProductAsk::Outline { words: n, .. } = p.ask() else { panic!("an outline: {task}") };
        assert_eq!(n, words, "{task}");
    }
}

#[test]
fn a_numbered_unit_is_labelled_in_order_and_filed_under_its_subject() {
    let (_d, mut s) = store("product-numbered");
    let task = "Plan a one-week trip to Japan, one day per entry.";
    let mut p = Product::new();
    let mut w = with_plan(task, "Days:\n1. Tokyo\n2. Kyoto", 1);
    let mut scratch = FixedBuf::with_capacity("plan", 4096);
    for (n, place) in [(1, "Tokyo"), (2, "Kyoto")] {
        let (_, q) = view(&mut p, &w, &mut s, task);
        assert_eq!(q, format!("Write Day {n}, about {place}.\n"));
        let ProductAsk::Unit { head, .. } = p.ask() else { panic!() };
        assert_eq!(head, format!("Day {n} – {place}"));
        let key = save(&p, &mut s, &format!("{head}: Visit the old streets and eat at a market."));
        assert_eq!(key, normalize(&format!("japan,plan,{place}")).unwrap());
        p.settle(&mut w, &mut scratch, 2, "").unwrap();
    }
    // The next outline's heading names what the days make up, from the task's own words.
    w.remove(&normalize(PLAN_KEY).unwrap());
    view(&mut p, &w, &mut s, task);
    let ProductAsk::Outline { prefix, .. } = p.ask() else { panic!("an outline") };
    assert_eq!(prefix, "Days of the one-week trip to Japan:\n1. Tokyo\n2. Kyoto\n3. ");
}

#[test]
fn a_doubtful_or_repeated_unit_is_told_apart_from_a_new_one() {
    let (_d, mut s) = store("product-judge");
    let mut p = Product::new();
    let w = working(TIPS);
    view(&mut p, &w, &mut s, TIPS);
    save(&p, &mut s, "Water regularly: Give the plants deep water twice a week.");
    view(&mut p, &w, &mut s, TIPS);
    assert_eq!(judge(&p, "Use mulch: Spread straw around the plants to keep the soil moist."), Verdict::New);
    assert!(matches!(judge(&p, "Use mulch: es una estrella de la galaxia que se ve en el cielo."), Verdict::Doubt(_)));
    assert!(matches!(judge(&p, "Use mulch: a kjiek ji-bjjik jibjiszwadzjisjimjjj."), Verdict::Doubt(_)));
    // The task is written in plain letters: a text in others is another language's.
    assert!(matches!(judge(&p, "Use mulch: Ãûââß-ljáwómífylh úkolimáriái svegrifáirnak a lúa."), Verdict::Doubt(_)));
    assert!(matches!(judge(&p, "Use mulch: Çiçar kabulit yaplar."), Verdict::Doubt(_)));
    assert_eq!(judge(&p, "Use mulch: A layer of straw from the café keeps the soil moist."), Verdict::New);
    assert!(matches!(judge(&p, "Water regularly: Water them each morning."), Verdict::Repeat(_)));
    assert!(matches!(judge(&p, "Soak the roots: Give the plants deep water twice a week."), Verdict::Repeat(_)));
    assert!(matches!(judge(&p, "Use mulch: use mulch."), Verdict::Repeat(_)));
    assert!(matches!(judge(&p, "Use mulch: practical tips for growing tomatoes at home."), Verdict::Repeat(_)));
    // Words of the head and the task under another ending say nothing new either; a number
    // adds nothing, a word of content that neither holds does.
    assert!(matches!(judge(&p, "Use mulch: Mulching tip for the tomato, 2019."), Verdict::Repeat(_)));
    assert!(matches!(judge(&p, "Pinch suckers: Pinching suckers of tomato plants."), Verdict::Repeat(_)));
    assert_eq!(judge(&p, "Pinch suckers: Pinching them sends strength into the fruit."), Verdict::New);
    assert_eq!(judge(&p, "Use mulch: A layer of straw keeps the soil moist."), Verdict::New);
    // A doubtful unit is kept apart: stored, never product.
    let key = p.file(p.key().unwrap(), "Use mulch: x").unwrap().unwrap();
    let apart = p.doubt_key(&key).unwrap();
    assert!(p.owns(key.as_str()) && !p.owns(apart.as_str()));
    // A save under other tags is not the product's, and a unit needs a head and a text.
    assert_eq!(p.file(&normalize("notes").unwrap(), "anything"), Ok(None));
    assert!(p.file(p.key().unwrap(), "no colon here").is_err());
    assert!(p.file(p.key().unwrap(), "Tomatoes: the task's own word.").is_err());
}

/// A unit that names the task or its entries talks about the product, not its subject: a
/// step-by-step bread task stored "In this task, you will be asked to bake one batch of bread"
/// and nothing else; over every kept model-check run, 23 of the 25 units with such a word were
/// junk (docs/measurements.md, session 24). It is kept apart, and an outline's item with one is
/// neither planned nor saved.
#[test]
fn a_unit_that_talks_about_the_task_is_kept_apart() {
    let (_d, mut s) = store("product-about-task");
    let mut p = Product::new();
    let w = working(TIPS);
    view(&mut p, &w, &mut s, TIPS);
    assert!(matches!(judge(&p, "Use a good fertilizer with high protein content for this task."), Verdict::Doubt(_)));
    assert!(matches!(judge(&p, "Harvest: Add the next entry to the list of tips."), Verdict::Doubt(_)));
    assert_eq!(judge(&p, "Harvest the fruit when it is red and gives a little to the touch."), Verdict::New);
    let bread = "Write step-by-step instructions for baking a loaf of bread at home, one step per entry.";
    let plan = "Steps:\n1. In this task, you will be asked to bake one batch of bread.\n2. Mix the flour, water, yeast and salt in a large bowl.\n3. Tasks\n4. Knead the dough";
    let (_d2, mut s2) = store("product-about-task-outline");
    let mut p = Product::new();
    let mut w = working(bread);
    view(&mut p, &w, &mut s2, bread);
    w.add(&normalize(PLAN_KEY).unwrap(), plan, 2).unwrap();
    let mut scratch = FixedBuf::with_capacity("plan", 4096);
    p.settle(&mut w, &mut scratch, 2, "").unwrap();
    assert_eq!(w.get(&normalize(PLAN_KEY).unwrap()), Some("Knead the dough"));
    let mut unit = ArrayString::new();
    assert!(p.next_unit(&mut unit));
    assert_eq!(unit.as_str(), "Step 1 – Mix the flour, water, yeast and salt in a large bowl.");
    assert!(!p.next_unit(&mut unit));
}

/// A unit whose words of content are those of the prompt's own instructions and the task
/// copies the prompt: a small model wrote the shipped purpose line back as a habit for sleep.
#[test]
fn a_unit_that_copies_the_prompts_instructions_says_nothing() {
    const SLEEP: &str = "List good habits for better sleep, one per entry.";
    let (_d, mut s) = store("product-instructions");
    let mut p = Product::new();
    p.read_instructions(
        "<purpose>You build what the task asks for, one entry at a time, and keep the entries in a store.</purpose>",
    );
    let w = working(SLEEP);
    view(&mut p, &w, &mut s, SLEEP);
    let copy = "building good habits for better sleep, one entry at a time and keeping the entries in a store.";
    assert!(matches!(judge(&p, copy), Verdict::Repeat(_)), "{:?}", judge(&p, copy));
    assert_eq!(judge(&p, "Go to bed at the same time every night, even on weekends."), Verdict::New);
    assert_eq!(judge(&p, "Keep your bedroom dark, quiet and cool at night."), Verdict::New);
    // Without the instructions read, the copy is no repeat: the rule is theirs (it names the
    // entries, so it is still kept apart).
    let mut q = Product::new();
    view(&mut q, &w, &mut s, SLEEP);
    assert!(matches!(judge(&q, copy), Verdict::Doubt(_)), "{:?}", judge(&q, copy));
}

#[test]
fn what_was_asked_survives_a_restart_and_a_changed_task_starts_afresh() {
    let (_d, mut s) = store("product-restart");
    let mut p = Product::new();
    let mut w = with_plan(TIPS, "Water regularly\nUse mulch", 1);
    view(&mut p, &w, &mut s, TIPS);
    let mut scratch = FixedBuf::with_capacity("plan", 4096);
    // Asked about "Water regularly"; its save was refused, so nothing is stored.
    p.settle(&mut w, &mut scratch, 2, "").unwrap();
    let mut state = ArrayString::new();
    p.state(&mut state);
    // A restart with the plan as it was before the settle: what was asked is not asked again.
    let mut w2 = working(TIPS);
    w2.add(&normalize(PLAN_KEY).unwrap(), "Water regularly\nUse mulch", 1).unwrap();
    let mut q = Product::new();
    q.open(&mut w2, Some(state.as_str()), &s);
    let (_, question) = view(&mut q, &w2, &mut s, TIPS);
    assert_eq!(question, "Write the tip about Use mulch.\n");
    // A changed task: its own product, and the old plan is dropped.
    let other = "Plan a one-week trip to Japan, one day per entry.";
    let mut w3 = working(other);
    w3.add(&normalize(PLAN_KEY).unwrap(), "Water regularly\nUse mulch", 1).unwrap();
    let mut r = Product::new();
    r.open(&mut w3, Some(state.as_str()), &s);
    assert!(w3.get(&normalize(PLAN_KEY).unwrap()).is_none(), "the old task's plan is dropped");
    assert_ne!(r.key(), p.key());
    assert!(matches!(r.ask(), ProductAsk::Outline { .. }));
    // A state that does not read is ignored.
    let mut t = Product::new();
    t.restore("not a state");
    t.restore("");
    t.restore("ffffffffffffffffff 99 zz");
}

#[test]
fn numbered_units_are_labelled_in_the_order_they_are_saved_and_none_past_the_tasks_count() {
    let (_d, mut s) = store("product-numbered-order");
    let mut p = Product::new();
    let task = "Plan a two-day trip to Rome, one day per entry.";
    let mut w = working(task);
    view(&mut p, &w, &mut s, task);
    let plan = "Days of the two-day trip to Rome:\n1. Walk through the Forum and climb the Palatine Hill.\n\
                2. See the Vatican Museums and the Sistine Chapel in the morning.\n\
                3. Take the train to Florence and see its great cathedral.";
    w.add(&normalize(PLAN_KEY).unwrap(), plan, 2).unwrap();
    let mut scratch = FixedBuf::with_capacity("plan", 4096);
    p.settle(&mut w, &mut scratch, 2, "").unwrap();
    let mut unit = ArrayString::new();
    // The first unit is refused (not saved): the next one takes its number.
    assert!(p.next_unit(&mut unit));
    assert_eq!(unit.as_str(), "Day 1 – Walk through the Forum and climb the Palatine Hill.");
    assert!(p.next_unit(&mut unit));
    assert_eq!(unit.as_str(), "Day 1 – See the Vatican Museums and the Sistine Chapel in the morning.");
    save(&p, &mut s, unit.as_str());
    p.saved(unit.as_str());
    assert!(p.next_unit(&mut unit));
    assert_eq!(unit.as_str(), "Day 2 – Take the train to Florence and see its great cathedral.");
    save(&p, &mut s, unit.as_str());
    p.saved(unit.as_str());
    // The next outline's units go on from the stored count; once the task's two days are
    // written, none is left to save.
    view(&mut p, &w, &mut s, task);
    w.add(&normalize(PLAN_KEY).unwrap(), "Days of the two-day trip to Rome:\n1. Eat pizza in Trastevere at night.", 3)
        .unwrap();
    p.settle(&mut w, &mut scratch, 3, "").unwrap();
    assert!(!p.next_unit(&mut unit), "{}", unit.as_str());
    assert_eq!(p.done(), Some(2));
}

/// The plan a first outline `plan` of `task` leaves, settled on an empty store.
fn planned(label: &str, task: &str, plan: &str) -> Option<String> {
    let (_d, mut s) = store(label);
    let mut p = Product::new();
    let mut w = working(task);
    view(&mut p, &w, &mut s, task);
    w.add(&normalize(PLAN_KEY).unwrap(), plan, 2).unwrap();
    let mut scratch = FixedBuf::with_capacity("plan", 4096);
    p.settle(&mut w, &mut scratch, 2, "").unwrap();
    w.get(&normalize(PLAN_KEY).unwrap()).map(str::to_string)
}

/// A name whose first letters an earlier name of the same outline starts with is a small model
/// spelling on from it ("Astrobiology, Astrology, Astrumologia"; "musechology, musciant"), not
/// naming: of such items in the outlines of every kept model-check run, 5% of a glossary's and
/// 7% of a list's were real ones, against 14% and 61% of the others (docs/measurements.md,
/// session 23). Items of other units may open alike ("Water deeply", "Water at the base").
#[test]
fn a_name_that_starts_as_an_earlier_name_of_its_outline_is_not_planned() {
    let task = "Build a glossary of astronomy terms: one entry per term, with a one-sentence definition.";
    let plan = "Astronomy terms:\n1. Nebula\n2. Astrobiology\n3. Astrology\n4. Black hole\n5. Astrumologia\n6. Nebulae cluster\n7. Galaxy";
    assert_eq!(planned("product-cascade", task, plan).as_deref(), Some("Nebula\nAstrobiology\nBlack hole\nGalaxy"));
    // A name of three letters is a start whole ("vim", then "vimi, vimx, vimy": a list of
    // shell commands, session 31); one of two is too short to tell ("rm", "rmdir").
    let task = "List common Linux shell commands and what each does.";
    let plan = "Linux shell commands:\n1. cat\n2. vim\n3. vimi\n4. rm\n5. vimx\n6. rmdir\n7. mkdir\n8. catz";
    assert_eq!(planned("product-cascade-short", task, plan).as_deref(), Some("cat\nvim\nrm\nrmdir\nmkdir"));
    // Tips' subjects may open alike.
    let plan = "Tips for growing tomatoes at home:\n1. Water deeply\n2. Water at the base\n3. Use mulch";
    assert_eq!(
        planned("product-cascade-tips", TIPS, plan).as_deref(),
        Some("Water deeply\nWater at the base\nUse mulch")
    );
}

/// An item that opens with the whole of an earlier subject says it again with a word more
/// ("Fukuoka", then "Fukuoka again": a small model's plan of a trip, session 27), whatever the
/// unit; and so does one that opens with a subject asked about before.
#[test]
fn an_item_that_opens_with_an_earlier_subject_whole_is_not_planned() {
    let task = "Plan a one-week trip to Japan, one day per entry.";
    let plan = "Days of the trip:\n1. Tokyo\n2. Fukuoka\n3. Fukuoka again\n4. Kyoto\n5. Tokyo Tower visit\n6. Fukuokan";
    assert_eq!(planned("product-again", task, plan).as_deref(), Some("Tokyo\nFukuoka\nKyoto\nFukuokan"));
    let (_d, mut s) = store("product-again-asked");
    let mut p = Product::new();
    let mut w = working(task);
    let mut scratch = FixedBuf::with_capacity("plan", 4096);
    view(&mut p, &w, &mut s, task);
    w.add(&normalize(PLAN_KEY).unwrap(), "Days:\n1. Osaka\n2. Nara", 2).unwrap();
    p.settle(&mut w, &mut scratch, 2, "").unwrap();
    // Osaka is asked about, and its unit refused.
    view(&mut p, &w, &mut s, task);
    p.settle(&mut w, &mut scratch, 3, "").unwrap();
    w.add(&normalize(PLAN_KEY).unwrap(), "Days:\n1. Osaka again\n2. Osaka Castle\n3. Kobe", 4).unwrap();
    let (_, question) = view(&mut p, &w, &mut s, task);
    assert!(question.contains("Kobe") && !question.contains("Osaka"), "{question}");
}

/// A name is not a sentence: an outline item of a task whose units are names that holds a
/// sentence word of its language ("is", "the", "in"; not the words that join names, "of",
/// "and") is a definition crammed into the item ("Music theory is aesthetics.", "The art of
/// music"). Of such items in every kept model-check run, 1 of 148 of a glossary's was a real
/// term, against 82 of 428 of the others (docs/measurements.md, session 23).
#[test]
fn a_name_item_with_a_sentence_word_is_not_planned() {
    let task = "Build a glossary of music theory terms: one entry per term, with a one-sentence definition.";
    let plan = "Music theory terms:\n1. Music theory is aesthetics.\n2. Harmony\n3. The art of music\n4. Circle of fifths\n5. Art in the context\n6. Rhythm and blues";
    assert_eq!(
        planned("product-name-sentence", task, plan).as_deref(),
        Some("Harmony\nCircle of fifths\nRhythm and blues")
    );
}

#[test]
fn an_outline_item_with_a_word_in_capitals_longer_than_an_acronym_is_not_planned() {
    let task = "Build a glossary of astronomy terms: one entry per term, with a one-sentence definition.";
    let plan = "Astronomy terms:\n1. ASTRONOMY\n2. NASA\n3. CELESTIAL bodies\n4. Black hole\n5. JWST";
    assert_eq!(planned("product-shouted", task, plan).as_deref(), Some("NASA\nBlack hole\nJWST"));
}

/// A unit in sentences that opens with the same two words of content as a shown or stored
/// one, the task's own words left out, says the same thing again: of a tomato run's 38 tips,
/// seven opened "Plant it indoors ..." (docs/measurements.md, session 24). A unit about a
/// planned subject opens with its subject. A unit with a name of its own is told apart by its
/// name: its text may open like another's ("A type of star that ...").
/// Saves `first` as the product of `task` and asserts that it is new, that `again` is a repeat
/// of it and that `other` is not; returns the store, the product and the working set.
fn again_and_other(
    task: &str,
    first: &str,
    again: &str,
    other: &str,
) -> (std::path::PathBuf, Store, Product, WorkingSet) {
    let (d, mut s) = store("product-again");
    let mut p = Product::new();
    let w = working(task);
    view(&mut p, &w, &mut s, task);
    let key = save(&p, &mut s, first);
    assert_eq!(p.judge(&key, first), Verdict::New, "{first}");
    p.saved(first);
    for (text, repeat) in [(again, true), (other, false)] {
        let key = p.file(p.key().unwrap(), text).unwrap().unwrap();
        assert_eq!(matches!(p.judge(&key, text), Verdict::Repeat(_)), repeat, "{text}");
    }
    (d, s, p, w)
}

#[test]
fn a_unit_that_opens_with_a_stored_units_first_words_of_content_is_a_repeat() {
    for (task, first, again, other) in [
        (
            TIPS,
            "Use organic fertilizer sparingly because too much can harm the soil.",
            "Use organic fertilizers like compost or fish meal for better growth.",
            "Use compost when possible for better soil quality.",
        ),
        (
            "Write a short story about a lighthouse keeper, one paragraph per entry.",
            "Paragraph 1 – The next day you see another ship coming to your island.",
            "Paragraph 2 – The next day you see a new crew coming from that island too.",
            "Paragraph 2 – The keeper climbs the stairs and lights the lamp at dusk.",
        ),
        (
            "Plan a five-day trip to Italy, one day per entry.",
            "Day 1 – A day in Rome, with a visit to the Colosseum and the Pantheon.",
            "Day 2 – A day in Rome, with a visit to the Vatican museums.",
            "Day 2 – A day in Florence, where you can explore the Renaissance art.",
        ),
        (
            TIPS,
            "Plant it indoors or outdoors depending on weather conditions.",
            "Plant them indoors from March until early April so you get the best results.",
            "Plant them deep, up to their first leaves, so they root along the stem.",
        ),
        (
            TIPS,
            "Use organic fertilizer that supports healthy plants.",
            // A unit about a planned subject: its head is where it opens.
            "Use organic fertilizer: Organic is the best.",
            "Use a trellis: Tie the stems to it as they grow.",
        ),
        (
            "Write a short story about a lighthouse keeper, one paragraph per entry.",
            "Paragraph 1 – The lighthouse keeper climbed the stairs as the storm came in.",
            "Paragraph 2 – The keeper climbed the stairs again, slower now, to trim the wick.",
            "Paragraph 2 – The keeper watched a ship fight the waves below the rocks.",
        ),
        (
            "Collect useful facts about the planets of the solar system, one fact per entry.",
            "Jupiter has a great red spot, a storm larger than the Earth.",
            "Jupiter has a great many moons, more than seventy of them.",
            "Jupiter takes twelve years to go once around the Sun.",
        ),
    ] {
        let (_d, mut s, mut p, w) = again_and_other(task, first, again, other);
        // Shown in the view of the next cycle, too.
        view(&mut p, &w, &mut s, task);
        let key = p.file(p.key().unwrap(), again).unwrap().unwrap();
        assert!(matches!(p.judge(&key, again), Verdict::Repeat(_)), "{again}");
    }
    // Definitions of two terms may open alike.
    let task = "Build a glossary of astronomy terms: one entry per term, with a one-sentence definition.";
    let (_d, mut s) = store("product-openings-named");
    let mut p = Product::new();
    let w = working(task);
    view(&mut p, &w, &mut s, task);
    let first = "Red dwarf: A type of star that is small, cool and long-lived.";
    save(&p, &mut s, first);
    p.saved(first);
    let second = "Blue giant: A type of star that is hot, bright and short-lived.";
    let key = p.file(p.key().unwrap(), second).unwrap().unwrap();
    assert_eq!(p.judge(&key, second), Verdict::New, "{second}");
}

#[test]
fn a_subject_that_opens_like_a_shown_unit_is_not_planned() {
    let (_d, mut s) = store("product-subject-opening");
    let mut p = Product::new();
    let mut w = working(TIPS);
    view(&mut p, &w, &mut s, TIPS);
    let first = "Use organic fertilizer that supports healthy plants.";
    save(&p, &mut s, first);
    p.saved(first);
    view(&mut p, &w, &mut s, TIPS);
    w.add(&normalize(PLAN_KEY).unwrap(), "Tips:\n1. Use organic fertilizer that supports healthy plants.\n2. Use organic fertilizer\n3. Use a trellis\n4. Mulch", 2).unwrap();
    let mut scratch = FixedBuf::with_capacity("plan", 4096);
    p.settle(&mut w, &mut scratch, 2, "").unwrap();
    assert_eq!(w.get(&normalize(PLAN_KEY).unwrap()), Some("Use a trellis\nMulch"));
}

#[test]
fn a_named_unit_is_asked_what_its_name_is_in_one_sentence() {
    let (_d, mut s) = store("product-named-question");
    let mut p = Product::new();
    let task = "Build a glossary of astronomy terms: one entry per term, with a one-sentence definition.";
    let w = with_plan(task, "Nebula\nBlack hole", 1);
    let (_, q) = view(&mut p, &w, &mut s, task);
    assert_eq!(q, "Say what Nebula is, in one sentence.\n");
    // A unit that is no name keeps its question.
    let w = with_plan(TIPS, "Use mulch", 1);
    let (_, q) = view(&mut p, &w, &mut s, TIPS);
    assert_eq!(q, "Write the tip about Use mulch.\n");
}

#[test]
fn a_planned_subject_leaves_its_stop_behind() {
    let (_d, mut s) = store("product-subject-stop");
    let mut p = Product::new();
    let task = "Build a glossary of astronomy terms: one entry per term, with a one-sentence definition.";
    let mut w = working(task);
    view(&mut p, &w, &mut s, task);
    w.add(&normalize(PLAN_KEY).unwrap(), "Astronomy terms:\n1. Black hole.\n2. Red giant star.\n3. Comet", 2).unwrap();
    let mut scratch = FixedBuf::with_capacity("plan", 4096);
    p.settle(&mut w, &mut scratch, 2, "").unwrap();
    assert_eq!(w.get(&normalize(PLAN_KEY).unwrap()), Some("Black hole\nRed giant star\nComet"));
    let (_, q) = view(&mut p, &w, &mut s, task);
    assert_eq!(q, "Say what Black hole is, in one sentence.\n");
}

#[test]
fn a_numbered_units_outline_goes_on_from_its_newest_units() {
    // A story, a trip or a recipe is read in order: an outline that went on from the first two
    // paragraphs wrote another third paragraph each time, and the story never moved on.
    let (_d, mut s) = store("product-numbered-newest");
    let task = "Plan a one-week trip to Japan, one day per entry.";
    let mut p = Product::new();
    let mut w = with_plan(task, "Days:\n1. Tokyo\n2. Kyoto\n3. Osaka", 1);
    let mut scratch = FixedBuf::with_capacity("plan", 4096);
    for _ in 0..3 {
        view(&mut p, &w, &mut s, task);
        let ProductAsk::Unit { head, .. } = p.ask() else { panic!("a unit") };
        save(&p, &mut s, &format!("{head}: Visit the old streets and eat at a market."));
        p.settle(&mut w, &mut scratch, 2, "").unwrap();
    }
    view(&mut p, &w, &mut s, task);
    let ProductAsk::Outline { prefix, first, .. } = p.ask() else { panic!("an outline") };
    assert_eq!((prefix, first), ("Days of the one-week trip to Japan:\n2. Kyoto\n3. Osaka\n4. ", 4));
    // The outline's own items are those after the two it was given.
    let plan = "Days of the one-week trip to Japan:\n2. Kyoto\n3. Osaka\n4. Nara\n5. Hiroshima";
    w.add(&normalize(PLAN_KEY).unwrap(), plan, 3).unwrap();
    p.settle(&mut w, &mut scratch, 3, "").unwrap();
    assert_eq!(w.get(&normalize(PLAN_KEY).unwrap()), Some("Nara\nHiroshima"));
    view(&mut p, &w, &mut s, task);
    assert_eq!(p.ask(), ProductAsk::Unit { head: "Day 4 – Nara", opening: "Nara", latin: true });
}

#[test]
fn a_unit_that_says_a_stored_unit_again_in_other_words_is_a_repeat() {
    // Pairs a model stored on tasks of three shapes, the second saying the first again with
    // another opening, and a unit that shares a word or two of them but says something else.
    let energy = "Write practical tips for saving energy at home, one tip per entry.";
    let bees = "Collect interesting facts about honeybees.";
    for (task, first, again, other) in [
        (
            energy,
            "Buy electric cars instead of gas powered vehicles and use them for transportation as well.",
            "Choose electric cars over gas powered vehicles for a better environment.",
            "Unplug electric devices when they are not in use.",
        ),
        (
            energy,
            "Insulate your walls and floors using modern materials like fiberglass or wood.",
            "Insulate your home using thermal mass materials like wood or concrete to reduce heat loss.",
            "Insulate the attic first, since warm air rises.",
        ),
        (
            bees,
            "Honeybees live in colonies of thousands of bees that work together.",
            "The honeybee is a social insect, with colonies consisting of thousands of bees that work together.",
            "A colony has one queen, who lays up to two thousand eggs a day.",
        ),
    ] {
        let (_d, mut s, mut p, _) = again_and_other(task, first, again, other);
        // Stored, beyond what the view shows, too.
        assert!(p.repeats_stored(&mut s, again), "{again}");
        assert!(!p.repeats_stored(&mut s, other), "{other}");
    }
}

/// What an outline's sample yields: its readable items that differ by the rules a unit is
/// judged by, each counted once: a unit in one sentence by its opening and gist, a name by its
/// start, a subject by itself.
#[test]
fn an_outline_yields_the_items_that_differ_from_its_earlier_ones() {
    let (_d, mut s) = store("product-yield");
    let mut p = Product::new();
    let w = working(TIPS);
    view(&mut p, &w, &mut s, TIPS);
    let same =
        "Tips for growing tomatoes at home:\n1. The soil of a tomato plant is a wonder of science and engineering.\n\
        2. The soil of a tomato plant is a wonder of science and engineering, truly.\n\
        3. The soil of the plant is a wonder of science.\n";
    assert_eq!(p.outline_yield(same), 1);
    let distinct = "Tips for growing tomatoes at home:\n1. Spread a thick layer of straw around the stems to keep the soil moist.\n\
        2. Water the plants deeply at the base early in the morning.\n3. Use mulch\n4. Use mulch\n5. Stake the plants\n";
    assert_eq!(p.outline_yield(distinct), 4);
    assert_eq!(p.outline_yield(""), 0);
    let task = "Build a glossary of astronomy terms: one entry per term, with a one-sentence definition.";
    let w = working(task);
    view(&mut p, &w, &mut s, task);
    assert_eq!(p.outline_yield("Astronomy terms:\n1. Nebula\n2. Nebulae\n3. Galaxy\n4. Black hole\n"), 3);
}

/// An outline's item that names the task's own unit is about the product, not a part of it:
/// neither a unit nor a subject.
#[test]
fn an_outline_item_that_names_the_tasks_unit_is_neither_saved_nor_planned() {
    let (_d, mut s) = store("product-own-unit");
    let mut p = Product::new();
    let task = "Write a beginner's guitar course, one lesson per entry.";
    let mut w = working(task);
    view(&mut p, &w, &mut s, task);
    let plan = "Lessons:\n1. The first lesson describes the guitar and how to hold it.\n\
                2. Hold the pick loosely between the thumb and the first finger.\n\
                3. The next lessons teach the chords.\n\
                4. Play the open E minor chord and strum it slowly with a steady beat.";
    w.add(&normalize(PLAN_KEY).unwrap(), plan, 2).unwrap();
    let mut scratch = FixedBuf::with_capacity("plan", 4096);
    p.settle(&mut w, &mut scratch, 2, "").unwrap();
    let units = next_units(&mut p);
    assert_eq!(
        units,
        [
            "Lesson 1 – Hold the pick loosely between the thumb and the first finger.",
            "Lesson 1 – Play the open E minor chord and strum it slowly with a steady beat."
        ]
    );
    let (_d2, mut s2) = store("product-own-unit-facts");
    let facts = "Collect interesting facts about the human heart.";
    let mut w = working(facts);
    view(&mut p, &w, &mut s2, facts);
    w.add(&normalize(PLAN_KEY).unwrap(), "Facts about the human heart:\n1. Fact about the human heart\n2. Valves", 3)
        .unwrap();
    p.settle(&mut w, &mut scratch, 3, "").unwrap();
    assert_eq!(w.get(&normalize(PLAN_KEY).unwrap()), Some("Valves"));
}

/// A story's paragraphs are read straight through: no outline plans them, each is asked for by
/// its label alone, goes on from the last sentence of the one before, and one that says an
/// earlier paragraph again is refused; an outline's plan left in working memory is not used.
#[test]
fn a_running_unit_goes_on_from_the_last_sentence_with_no_outline() {
    let (_d, mut s) = store("product-running");
    let mut p = Product::new();
    let task = "Write a short story about a lighthouse keeper, one paragraph per entry.";
    let mut w = with_plan(task, "Paragraphs:\n1. The storm\n2. The rescue", 1);
    let (v, q) = view(&mut p, &w, &mut s, task);
    assert!(p.running());
    assert_eq!(v, format!("<product>\n{task}\n</product>\n"));
    assert_eq!(q, "What happens next? Write Paragraph 1.\n");
    assert!(matches!(p.ask(), ProductAsk::Unit { head: "Paragraph 1", .. }), "no outline, no subject");
    let mut free = FixedBuf::with_capacity("ask", 4096);
    p.write_ask(&mut free).unwrap();
    assert_eq!(
        free.text().unwrap(),
        "What happens next? Write Paragraph 1.\nSave it with tags lighthouse,story and a value that starts with \"Paragraph 1: \".\n"
    );
    let first =
        "Paragraph 1: Tom kept the light on the cliff for thirty years. One night a storm came in from the sea.";
    let key = save(&p, &mut s, first);
    assert_eq!(key.as_str(), "lighthouse,paragraph_1,story");
    p.saved(first);
    let (v, q) = view(&mut p, &w, &mut s, task);
    assert_eq!(
        v,
        format!("<product>\n{task}\nParagraph 1 ends: One night a storm came in from the sea.\n</product>\n")
    );
    assert_eq!(q, "What happens next? Write Paragraph 2.\n");
    assert!(matches!(p.ask(), ProductAsk::Unit { head: "Paragraph 2", .. }));
    let again = "Paragraph 2: Tom kept the light on the cliff for thirty years. One night a storm came in.";
    assert!(matches!(judge(&p, again), Verdict::Repeat(_)), "a paragraph said again");
    let next = "Paragraph 2: The waves broke over the rocks, and a small boat lost its way in the dark.";
    assert_eq!(judge(&p, next), Verdict::New);
    // One that opens with the sentence shown says it again; one that goes on from it may
    // share some of its words.
    let echo = "Paragraph 2: One night a storm came in from the sea. The harbour master's daughter rowed out in a \
                small boat, singing old songs to the gulls while her brother mended nets by the fire.";
    assert!(matches!(judge(&p, echo), Verdict::Repeat(_)), "{echo}");
    let on = "Paragraph 2: The storm tore at the tower all night, and Tom climbed the stairs to keep the lamp lit.";
    assert_eq!(judge(&p, on), Verdict::New);
    // An ask that saved none: the plan is not read, nothing is remembered as asked, and the
    // next ask goes on from the story's beginning alone (the model wrote the sentence shown
    // again), a unit that opens with it said again; after a second, from the task alone. One
    // that saved a unit goes on from its last sentence again, after a restart too.
    let mut scratch = FixedBuf::with_capacity("plan", 4096);
    p.settle(&mut w, &mut scratch, 2, "").unwrap();
    let (v, q) = view(&mut p, &w, &mut s, task);
    assert_eq!(q, "What happens next? Write Paragraph 2.\n");
    assert_eq!(
        v,
        format!(
            "<product>\n{task}\nParagraph 1 begins: Tom kept the light on the cliff for thirty years.\n</product>\n"
        )
    );
    let opening = "Paragraph 2: Tom kept the light on the cliff for many years. The sea was calm that night.";
    assert!(matches!(judge(&p, opening), Verdict::Repeat(_)), "{opening}");
    assert_eq!(judge(&p, on), Verdict::New);
    assert_eq!(w.get(&normalize(PLAN_KEY).unwrap()), Some("Paragraphs:\n1. The storm\n2. The rescue"));
    p.settle(&mut w, &mut scratch, 2, "").unwrap();
    let (v, _) = view(&mut p, &w, &mut s, task);
    assert_eq!(v, format!("<product>\n{task}\n</product>\n"));
    save(&p, &mut s, next);
    p.saved(next);
    p.settle(&mut w, &mut scratch, 3, "").unwrap();
    let mut state = ArrayString::new();
    p.state(&mut state);
    let mut again = Product::new();
    again.restore(state.as_str());
    let (v, q) = view(&mut again, &w, &mut s, task);
    assert_eq!(q, "What happens next? Write Paragraph 3.\n");
    assert_eq!(
        v,
        format!(
            "<product>\n{task}\nParagraph 2 ends: The waves broke over the rocks, and a small boat lost its way in the dark.\n</product>\n"
        )
    );
    // A German story: the question in German.
    let mut g = Product::new();
    let task = "Schreibe eine Geschichte über einen Leuchtturmwärter, ein Eintrag pro Absatz.";
    let w = working(task);
    let (_, q) = view(&mut g, &w, &mut s, task);
    assert!(g.running());
    assert_eq!(q, "Wie geht es weiter? Schreibe Absatz 1.\n");
    // A paragraph is prose in the task's language, not a few words, and not the question
    // again (a small base model wrote both).
    assert!(matches!(judge(&g, "Absatz 1: Ëxemplar 2, 1986."), Verdict::Doubt(_)));
    assert!(matches!(judge(&g, "Absatz 1: Wie geht es weiter? Schreibe Absatz 2."), Verdict::Repeat(_)));
    let prose = "Absatz 1: Der alte Wärter stieg jeden Abend die Treppe hinauf und zündete das Licht an.";
    assert_eq!(judge(&g, prose), Verdict::New);
}

/// A day whose text names only the other days' places, the task and its own says nothing of
/// its own ("Day 3 – Nara: Tokyo and Hiroshima."); one that says what to do there is new. A
/// tip may name what another tip's subject names: tips are not numbered units about places.
#[test]
fn a_day_that_only_names_the_other_days_is_refused() {
    let (_d, mut s) = store("product-other-days");
    let task = "Plan a one-week trip to Japan, one day per entry.";
    let mut p = Product::new();
    let w = working(task);
    view(&mut p, &w, &mut s, task);
    for v in
        ["Day 1 – Tokyo: Walk through the old streets of Asakusa.", "Day 2 – Hiroshima: Visit the Peace Memorial Park."]
    {
        save(&p, &mut s, v);
        p.saved(v);
    }
    view(&mut p, &w, &mut s, task);
    for copy in ["Day 3 – Nara: Tokyo and Hiroshima.", "Day 3 – Nara: Tokyo and Hiroshima, Japan, Nara."] {
        assert!(matches!(judge(&p, copy), Verdict::Repeat(_)), "{copy}");
    }
    let day = "Day 3 – Nara: Feed the deer in Nara Park and see the great Buddha of Todaiji.";
    assert_eq!(judge(&p, day), Verdict::New);
    // Asked about a subject with the heads in view, a small model wrote them again: after an
    // ask that saved none, the next is asked with the task alone, and after one that saved,
    // with the heads again.
    let mut w = with_plan(task, "Days:\n1. Nara\n2. Kyoto\n3. Nikko", 3);
    let heads = "Day 1 – Tokyo\nDay 2 – Hiroshima\n";
    let (v, _) = view(&mut p, &w, &mut s, task);
    assert!(v.contains(heads), "{v}");
    let mut scratch = FixedBuf::with_capacity("plan", 4096);
    p.settle(&mut w, &mut scratch, 4, "").unwrap();
    let (v, q) = view(&mut p, &w, &mut s, task);
    assert_eq!(
        (v.as_str(), q.as_str()),
        (format!("<product>\n{task}\n</product>\n").as_str(), "Write Day 3, about Kyoto.\n")
    );
    let kyoto = "Day 3 – Kyoto: Walk the red gates of Fushimi Inari at dawn.";
    save(&p, &mut s, kyoto);
    p.saved(kyoto);
    p.settle(&mut w, &mut scratch, 5, "").unwrap();
    let (v, q) = view(&mut p, &w, &mut s, task);
    assert!(v.contains("Day 1 – Tokyo\nDay 2 – Hiroshima\nDay 3 – Kyoto\n"), "{v}");
    assert_eq!(q, "Write Day 4, about Nikko.\n");
    let (_d2, mut s2) = store("product-other-tips");
    let mut t = Product::new();
    let w = working(TIPS);
    view(&mut t, &w, &mut s2, TIPS);
    save(&t, &mut s2, "Stake the plants: Tie the stems to a stake as they grow.");
    view(&mut t, &w, &mut s2, TIPS);
    let tip = "Water deeply: Water the plants deeply at the base of the stake.";
    assert_eq!(judge(&t, tip), Verdict::New);
}

/// An outline whose every unit is refused as a repeat gave nothing, however many it wrote: the
/// next goes on from other first subjects, and after [`BARREN_MAX`] such outlines from none.
/// Counted as productive because it had units at all, a small model given the same two first
/// subjects wrote variants of the second twenty outlines in a row ("Use a pot that is only 100
/// x 100 cm or less", then 150, 200, ...: the held-out houseplants task, session 30).
#[test]
fn an_outline_whose_units_are_all_refused_is_barren() {
    let task = "Give advice for keeping houseplants alive, one piece of advice per entry.";
    let (_d, mut s) = store("product-barren-units");
    let mut p = Product::new();
    let mut w = working(task);
    view(&mut p, &w, &mut s, task);
    for v in [
        "Keep a potted plant in a pot that is not too large, as it will not grow properly.",
        "Use a pot that is only 100 x 100 cm or less.",
        "Water your plants sparingly, and do not use too much water.",
        "Wipe the dust off the leaves with a damp cloth every month.",
    ] {
        let key = save(&p, &mut s, v);
        assert_eq!(p.judge(&key, v), Verdict::New, "{v}");
        p.saved(v);
    }
    let mut scratch = FixedBuf::with_capacity("plan", 4096);
    let prefix_of = |p: &Product| match p.ask() {
        ProductAsk::Outline { prefix, .. } => prefix.to_string(),
        _ => panic!("an outline"),
    };
    let mut prefixes = Vec::new();
    for n in 0..3u64 {
        view(&mut p, &w, &mut s, task);
        let prefix = prefix_of(&p);
        prefixes.push(prefix.clone());
        // The outline: the given first subjects, then units that say a stored one again.
        let plan = format!(
            "{prefix}Use a pot that is only 150 x 150 cm or less.\nUse a pot that is only 200 x 200 cm or less."
        );
        w.add(&normalize(PLAN_KEY).unwrap(), &plan, 2 + n).unwrap();
        p.settle(&mut w, &mut scratch, 2 + n, "").unwrap();
        let mut unit = ArrayString::new();
        let mut units = 0;
        while p.next_unit(&mut unit) {
            let key = p.file(p.key().unwrap(), unit.as_str()).unwrap().unwrap();
            assert!(matches!(p.judge(&key, unit.as_str()), Verdict::Repeat(_)), "{}", unit.as_str());
            units += 1;
        }
        assert_eq!(units, 2, "{plan}");
    }
    assert!(prefixes[0].ends_with(":\n1. Keep a potted plant in a pot that is not too large, as it will not grow properly.\n2. Use a pot that is only 100 x 100 cm or less.\n3. "), "{prefixes:?}");
    assert!(prefixes[1].ends_with(":\n1. Water your plants sparingly, and do not use too much water.\n2. Wipe the dust off the leaves with a damp cloth every month.\n3. "), "{prefixes:?}");
    assert!(prefixes[2].ends_with(":\n1. "), "{prefixes:?}");
}

/// An outline that planned something leaves the next one its first subjects; a barren one
/// moves them on to the next of the product's entries, round to the first past the last, and
/// every [`BARREN_MAX`] barren outlines in a row one goes on from nothing. Sent back to the
/// oldest two after each outline that gave, a small model wrote the facts it had written from
/// them before, every other cycle (the planets, session 32). Where they stand survives a
/// restart; a state written before this has them at the first.
#[test]
fn first_subjects_that_gave_nothing_are_not_given_again() {
    let task = "Give advice for keeping houseplants alive, one piece of advice per entry.";
    let (_d, mut s) = store("product-first-skip");
    let mut p = Product::new();
    let mut w = working(task);
    view(&mut p, &w, &mut s, task);
    let stored = [
        "Keep a potted plant in a pot that is not too large, as it will not grow properly.",
        "Use a pot with a hole in the bottom so that water drains away.",
        "Water your plants sparingly, and do not use too much water.",
        "Wipe the dust off the leaves with a damp cloth every month.",
    ];
    for v in stored {
        let key = save(&p, &mut s, v);
        p.saved(v);
        assert!(!key.as_str().is_empty());
    }
    let mut scratch = FixedBuf::with_capacity("plan", 4096);
    // One outline: its prefix, then `items`; the units it plans saved where new.
    let mut outline = |p: &mut Product, s: &mut Store, w: &mut WorkingSet, items: &str, now: u64| -> String {
        view(p, w, s, task);
        let ProductAsk::Outline { prefix, .. } = p.ask() else { panic!("an outline") };
        let prefix = prefix.to_string();
        w.add(&normalize(PLAN_KEY).unwrap(), &format!("{prefix}{items}"), now).unwrap();
        p.settle(w, &mut scratch, now, "").unwrap();
        let mut unit = ArrayString::new();
        while p.next_unit(&mut unit) {
            let key = p.file(p.key().unwrap(), unit.as_str()).unwrap().unwrap();
            if p.judge(&key, unit.as_str()) == Verdict::New {
                save(p, s, unit.as_str());
                p.saved(unit.as_str());
            }
        }
        prefix
    };
    let given = |a: usize, b: usize| format!(":\n1. {}\n2. {}\n3. ", stored[a], stored[b]);
    let repeat = "Use a pot that is only 150 x 150 cm or less.";
    let first = outline(&mut p, &mut s, &mut w, repeat, 2);
    assert!(first.ends_with(&given(0, 1)), "{first}");
    let second =
        outline(&mut p, &mut s, &mut w, "Mist the leaves of tropical plants with rain water every morning.", 3);
    assert!(second.ends_with(&given(2, 3)), "{second}");
    assert_eq!(p.written, 5, "the new unit is saved");
    // It gave: the next goes on from the same two, not the oldest two again.
    let third = outline(&mut p, &mut s, &mut w, repeat, 4);
    assert!(third.ends_with(&given(2, 3)), "{third}");
    // A restart: the state says where the first subjects stand.
    let mut state = ArrayString::new();
    p.state(&mut state);
    let mut again = Product::new();
    again.restore(state.as_str());
    view(&mut again, &w, &mut s, task);
    view(&mut p, &w, &mut s, task);
    let (ProductAsk::Outline { prefix: a, .. }, ProductAsk::Outline { prefix: b, .. }) = (again.ask(), p.ask()) else {
        panic!("outlines")
    };
    assert_eq!(a, b, "{state}");
    assert!(a.ends_with(":\n1. Mist the leaves of tropical plants with rain water every morning.\n2. "), "{a}");
    // Barren: the next from the entry after them (the product's fifth, the newest), then,
    // barren twice in a row, from nothing, then round from the fourth.
    let mist = "Mist the leaves of tropical plants with rain water every morning.";
    let fourth = outline(&mut p, &mut s, &mut w, repeat, 5);
    assert!(fourth.ends_with(&format!(":\n1. {mist}\n2. ")), "{fourth}");
    let fifth = outline(&mut p, &mut s, &mut w, repeat, 6);
    assert!(fifth.ends_with(":\n1. "), "{fifth}");
    let sixth = outline(&mut p, &mut s, &mut w, repeat, 7);
    assert!(sixth.ends_with(&format!(":\n1. {}\n2. {mist}\n3. ", stored[3])), "{sixth}");
    // A state of before: the first subjects from the first entries.
    let old = state.as_str().split(' ').next().unwrap().to_string() + " 0";
    let mut before = Product::new();
    before.restore(&old);
    view(&mut before, &w, &mut s, task);
    let ProductAsk::Outline { prefix, .. } = before.ask() else { panic!("an outline") };
    assert!(prefix.ends_with(&given(0, 1)), "{prefix}");
}

/// A name cited with its article ("Der Sternhaufen", as German glossaries list their terms) is
/// the name after it: with the article, the item held a sentence word and was not planned, and
/// every German outline of a base model planned nothing (one entry in 20 cycles, session 31).
/// English names are cited bare, so an English item that opens with "The" is still a phrase.
#[test]
fn a_name_cited_with_its_article_is_planned_without_it() {
    let task =
        "Erstelle ein Glossar der Astronomie-Begriffe: ein Eintrag pro Begriff, mit einer Definition in einem Satz.";
    let plan = "Astronomie-Begriffe:\n1. Der Sternhaufen.\n2. Die Sonne.\n3. Die Sterne im Auge.\n4. Der Mond\n5. Das\n6. Die Galaxie";
    assert_eq!(planned("product-article-de", task, plan).as_deref(), Some("Sternhaufen\nSonne\nMond\nGalaxie"));
    let task = "Crée un glossaire des termes d'astronomie : une entrée par terme, avec une définition en une phrase.";
    let plan = "Termes d'astronomie :\n1. L'étoile\n2. La comète\n3. Le trou noir";
    assert_eq!(planned("product-article-fr", task, plan).as_deref(), Some("étoile\ncomète\ntrou noir"));
    let task = "Build a glossary of astronomy terms: one entry per term, with a one-sentence definition.";
    let plan = "Astronomy terms:\n1. The universe\n2. Nebula";
    assert_eq!(planned("product-article-en", task, plan).as_deref(), Some("Nebula"));
}
