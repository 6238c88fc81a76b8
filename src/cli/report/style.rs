//! The report page's one stylesheet, inline, and its SHA-256 in base64 for the page's
//! Content-Security-Policy (which then lets no other style apply). Narrow screens stack the
//! tables' rows (each cell headed by its `data-label`); print keeps sections whole.

pub(super) const STYLE: &str = "\
:root{--fg:#1d232a;--mute:#5b6570;--line:#d6dbe0;--bg:#fff;--band:#f4f6f8;\
--o0:#2e9d57;--o1:#9db4c8;--o2:#e08a1e;--o3:#8e5cc4;--o4:#d8425a;--o5:#7a1020;\
--c0:#2b6cb0;--c1:#2e9d57;--c2:#d97706;--c3:#7c3aed}\
*{box-sizing:border-box}\
body{margin:0 auto;max-width:72rem;padding:1rem;font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:var(--fg);background:var(--bg)}\
h1{font-size:1.5rem;margin:.2rem 0 .6rem}h2{font-size:1.15rem;margin:1.6rem 0 .5rem;border-bottom:1px solid var(--line);padding-bottom:.2rem}\
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.88em;overflow-wrap:anywhere}\
.facts{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,17rem),1fr));gap:.4rem .9rem;margin:0}\
.facts div{background:var(--band);border-radius:6px;padding:.4rem .6rem;min-width:0}\
.facts dt{font-size:.78rem;color:var(--mute);text-transform:uppercase;letter-spacing:.04em}\
.facts dd{margin:0;overflow-wrap:anywhere}\
.warn{color:#a01c2c}\
#task h2{margin-top:.4rem}p.task{white-space:pre-wrap;overflow-wrap:anywhere;font-size:1.05rem;margin:0 0 .8rem;padding:.5rem .7rem;border-left:4px solid var(--c0);background:var(--band)}\
figure{margin:0 0 1rem}figcaption{font-weight:600;margin-bottom:.3rem}.unit{font-weight:400;color:var(--mute)}\
svg{display:block;width:100%}svg.strip{height:3.2rem}svg.plot{height:11rem;border:1px solid var(--line);border-radius:4px}\
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,30rem),1fr));gap:1rem 1.5rem}\
.axis{display:flex;justify-content:space-between;gap:1rem;font-size:.78rem;color:var(--mute)}\
.legend{font-size:.85rem;margin:.3rem 0 0}.note{color:var(--mute);font-size:.8rem}\
.key{display:inline-block;width:.8rem;height:.8rem;border-radius:2px;vertical-align:-.1rem;margin:0 .25rem 0 .4rem}\
.frame{fill:none}.grid{stroke:var(--line);stroke-width:1;vector-effect:non-scaling-stroke}\
.median{fill:none;stroke:currentColor;stroke-width:2;vector-effect:non-scaling-stroke;stroke-linejoin:round}\
.band{fill:currentColor;fill-opacity:.18;stroke:none}\
.mark{fill:#f3c96b;fill-opacity:.35}span.mark{background:#f3c96b}\
.lim0,.lim1,.lim2{stroke-width:1.5;stroke-dasharray:6 4;vector-effect:non-scaling-stroke}\
.lim0{stroke:#d97706}.lim1{stroke:#c81e1e}.lim2{stroke:#6b7280}\
span.lim0{background:#d97706}span.lim1{background:#c81e1e}span.lim2{background:#6b7280}\
g.c0,span.c0{color:var(--c0)}g.c1,span.c1{color:var(--c1)}g.c2,span.c2{color:var(--c2)}g.c3,span.c3{color:var(--c3)}\
span.c0,span.c1,span.c2,span.c3{background:currentColor}\
.o0{fill:var(--o0)}.o1{fill:var(--o1)}.o2{fill:var(--o2)}.o3{fill:var(--o3)}.o4{fill:var(--o4)}.o5{fill:var(--o5)}\
span.o0{background:var(--o0)}span.o1{background:var(--o1)}span.o2{background:var(--o2)}span.o3{background:var(--o3)}span.o4{background:var(--o4)}span.o5{background:var(--o5)}\
.s0{fill:#94a3b8}.s1{fill:#2b6cb0}.s2{fill:#0d9488}.s3{fill:#f3b63b}.s4{fill:#6b7280}\
span.s0{background:#94a3b8}span.s1{background:#2b6cb0}span.s2{background:#0d9488}span.s3{background:#f3b63b}span.s4{background:#6b7280}\
.tables{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,30rem),1fr));gap:0 1.5rem}\
.scroll{overflow-x:auto}.wide{grid-column:1/-1}td.mono{overflow-wrap:break-word}\
table{border-collapse:collapse;width:100%;font-size:.88rem}\
th,td{text-align:left;padding:.25rem .45rem;border-bottom:1px solid var(--line);vertical-align:top}\
th{font-weight:600;background:var(--band)}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
td.v{overflow-wrap:anywhere;min-width:10rem}td.t{font-variant-numeric:tabular-nums;min-width:6.5rem}.item{white-space:nowrap}\
.audit dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem .8rem;margin:0}.audit dt{color:var(--mute)}.audit dd{margin:0;min-width:0}\
footer{margin-top:2rem;font-size:.8rem;color:var(--mute)}\
@media (max-width:40rem){body{padding:.6rem;font-size:14px}\
table.stack,table.stack tbody,table.stack tr,table.stack td{display:block;width:100%}table.stack tr:first-child{display:none}\
table.stack tr{border-bottom:1px solid var(--line);padding:.3rem 0}\
table.stack td{border:0;padding:.05rem .2rem .05rem 6.6rem;text-align:left;min-width:0;position:relative}\
table.stack td::before{content:attr(data-label);position:absolute;left:.2rem;top:.2rem;color:var(--mute);font-size:.8rem}.audit dl{grid-template-columns:1fr}.audit dd{margin-bottom:.4rem}svg.plot{height:9rem}}\
@media print{body{max-width:none;font-size:11px}.scroll{overflow:visible}section,figure,tr{break-inside:avoid}\
svg.plot{height:8rem}*{-webkit-print-color-adjust:exact;print-color-adjust:exact}}\
";

/// The base64 of the SHA-256 of [`STYLE`], for the page's Content-Security-Policy.
pub(super) fn style_digest() -> &'static str {
    static DIGEST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DIGEST.get_or_init(|| base64(&crate::sha256::Sha256::digest(STYLE.as_bytes())))
}

/// Standard base64 (RFC 4648 §4), with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (b(0) << 16) | (b(1) << 8) | b(2);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            let c = ALPHABET.get((n >> shift) as usize & 63).copied().unwrap_or(b'=');
            out.push(if i <= chunk.len() { c as char } else { '=' });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_as_rfc_4648_says() {
        // RFC 4648 §10 test vectors.
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(super::base64(plain.as_bytes()), coded);
        }
        // A SHA-256 is 44 characters with one pad.
        assert_eq!(super::style_digest().len(), 44);
        assert!(super::style_digest().ends_with('='));
    }
}
