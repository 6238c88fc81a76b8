use lkjagent::reply::read::TEXT_ELEMENTS;
use lkjagent::reply::Reader;
use lkjagent::tag::{ParseOptions, TagTree};
fn fnv(name: &[u8]) -> u32 {
    name.iter().fold(0x811c_9dc5u32, |h, &c| (h ^ u32::from(c.to_ascii_lowercase())).wrapping_mul(0x0100_0193))
}
fn time(name: &str, s: &str) {
    let mut r = Reader::new();
    let mut t = TagTree::with_capacity(lkjagent::limits::TAG_MAX_NODES, lkjagent::limits::TAG_TEXT_BYTES);
    let opts = ParseOptions { text_elements: TEXT_ELEMENTS };
    let mut best_p = f64::MAX;
    let mut best_r = f64::MAX;
    for _ in 0..20 {
        let a = std::time::Instant::now();
        std::hint::black_box(t.parse(&s, &opts));
        best_p = best_p.min(a.elapsed().as_secs_f64() * 1e3);
        let a = std::time::Instant::now();
        std::hint::black_box(r.read(s.as_bytes(), 1).len());
        best_r = best_r.min(a.elapsed().as_secs_f64() * 1e3);
    }
    println!("{name:30} {:8} bytes parse {best_p:7.3} ms read {best_r:7.3} ms  {:?}", s.len(), t.report().limit);
}
fn fill(head: &str, unit: &str) -> String {
    let mut s = head.to_string();
    while s.len() + unit.len() <= 1 << 20 {
        s.push_str(unit);
    }
    s
}
fn main() {
    let open: String = (0..64).map(|d| format!("<o{d}>")).collect();
    let buckets: Vec<usize> = (0..64).map(|d| (fnv(format!("o{d}").as_bytes()) >> 24) as usize).collect();
    let mut coll = String::new();
    for k in 0.. {
        let n = format!("q{k}");
        if buckets.contains(&((fnv(n.as_bytes()) >> 24) as usize)) {
            coll = n;
            break;
        }
    }
    time("unmatched colliding bucket", &fill(&open, &format!("</{coll}>")));
    time("unmatched", &fill(&open, "</zz>"));
    time("ampersands", &fill("<value>", "&"));
    time("amp entities", &fill("<value>", "&amp;"));
    time("amp entities no te", &fill("<x>", "&amp;"));
    time("lt noise", &fill("", "<a<"));
    time("lt space", &fill("", "< "));
    time("short tags", &fill("", "<a>"));
    time("self closing", &fill("", "<a/>"));
    time("comments", &fill("", "<!---->"));
    time("cdata", &fill("", "<![CDATA[]]>"));
    time("unclosed values", &fill("", "<value>x"));
    let all: String = TEXT_ELEMENTS.iter().map(|t| format!("<{t}>")).collect();
    time("all text elements unclosed", &fill(&all, "x<y"));
    time("value with lt", &fill("<value>", "<"));
    time("value with lt slash", &fill("<value>", "</"));
    time("value with close-like", &fill("<value>", "</valu>"));
    time("think markers", &fill("", "<think></think>"));
    time("orphan close", &fill("", "</think>"));
    time("attrs", &fill("<a ", "b=c "));
    time("quoted attr lt", &fill("", "<a b=\"<"));
    time("escaped lt name", &fill("", "&lt;a"));
    time("escaped tags", &fill("", "&lt;a&gt;"));
    time("deep opens", &fill("", "<a>"));
    time("deep opens distinct", &{
        let mut s = String::new();
        let mut i = 0;
        while s.len() < (1 << 20) - 20 {
            s.push_str(&format!("<a{i}>"));
            i += 1;
        }
        s
    });
    time("harmony", &fill("", "<|channel|>"));
    time("pipes", &fill("", "|"));
    time("json", &fill("{\"next_state\":\"", "a"));
}
