//! Judge-answer extraction: prose, fences, several objects, whole provider bodies. Structure-
//! aware: an answer is assembled from prose, fenced and bare JSON pieces.
#![no_main]
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Piece {
    Prose(String),
    Fenced { lang: bool, body: String },
    Object(String),
}

#[derive(Arbitrary, Debug)]
struct Answer {
    pieces: Vec<Piece>,
    raw: Vec<u8>,
    status: Option<u16>,
}

fuzz_target!(|a: Answer| {
    let mut content = String::new();
    for p in &a.pieces {
        match p {
            Piece::Prose(s) => content.push_str(s),
            Piece::Fenced { lang, body } => {
                content.push_str(if *lang { "```json\n" } else { "```\n" });
                content.push_str(body);
                content.push_str("\n```");
            }
            Piece::Object(s) => {
                content.push('{');
                content.push_str(s);
                content.push('}');
            }
        }
    }
    let _ = seal_core::judge::parse::extract_object(&content);
    let body = serde_json::json!({"choices": [{"message": {"content": content}, "finish_reason": "stop"}]});
    let _ = seal_core::judge::parse::parse_answer(body.to_string().as_bytes());
    let _ = seal_core::judge::parse::evaluate_raw(&a.raw, a.status);
    let _ = seal_core::judge::parse::response_facts(&a.raw);
});
