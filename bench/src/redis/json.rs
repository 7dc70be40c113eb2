//! Reads the one JSON line each peer script prints. Small on purpose: objects, arrays,
//! strings, numbers, true/false/null, which is all the peers send (a JSON crate would
//! be the only new dependency of the bench, for this).

use crate::Result;

#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    pub fn parse(text: &str) -> Result<Json> {
        let mut parser = Parser { text: text.as_bytes(), at: 0 };
        let value = parser.value()?;
        parser.skip_space();
        if parser.at != parser.text.len() {
            return Err(parser.error("trailing characters"));
        }
        Ok(value)
    }

    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Result<&Json> {
        match self {
            Json::Object(members) => Ok(members
                .iter()
                .find_map(|(name, value)| (name == key).then_some(value))
                .ok_or_else(|| format!("no \"{key}\" in the JSON"))?),
            _ => Err(format!("looked up \"{key}\" in JSON that is not an object").into()),
        }
    }

    pub fn as_str(&self) -> Result<&str> {
        match self {
            Json::String(text) => Ok(text),
            other => Err(format!("expected a JSON string, got {other:?}").into()),
        }
    }

    pub fn as_array(&self) -> Result<&[Json]> {
        match self {
            Json::Array(items) => Ok(items),
            other => Err(format!("expected a JSON array, got {}", other.kind()).into()),
        }
    }

    /// A whole, non-negative number (exact up to 2^53).
    pub fn as_u64(&self) -> Result<u64> {
        match self {
            Json::Number(n) if *n >= 0.0 && n.fract() == 0.0 && *n < 2f64.powi(53) => Ok(*n as u64),
            other => Err(format!("expected a whole non-negative number, got {other:?}").into()),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn error(&self, what: &str) -> Box<dyn std::error::Error + Send + Sync> {
        format!("bad JSON at byte {}: {what}", self.at).into()
    }

    fn skip_space(&mut self) {
        while self.text.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.skip_space();
        let found = self.text.get(self.at) == Some(&byte);
        if found {
            self.at += 1;
        }
        found
    }

    fn expect(&mut self, byte: u8) -> Result<()> {
        if self.eat(byte) {
            Ok(())
        } else {
            Err(self.error(&format!("expected '{}'", byte as char)))
        }
    }

    fn value(&mut self) -> Result<Json> {
        self.skip_space();
        match self.text.get(self.at) {
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => Ok(Json::String(self.string()?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => self.word(),
        }
    }

    fn object(&mut self) -> Result<Json> {
        self.expect(b'{')?;
        let mut members = Vec::new();
        if self.eat(b'}') {
            return Ok(Json::Object(members));
        }
        loop {
            self.skip_space();
            let key = self.string()?;
            self.expect(b':')?;
            members.push((key, self.value()?));
            if self.eat(b'}') {
                return Ok(Json::Object(members));
            }
            self.expect(b',')?;
        }
    }

    fn array(&mut self) -> Result<Json> {
        self.expect(b'[')?;
        let mut items = Vec::new();
        if self.eat(b']') {
            return Ok(Json::Array(items));
        }
        loop {
            items.push(self.value()?);
            if self.eat(b']') {
                return Ok(Json::Array(items));
            }
            self.expect(b',')?;
        }
    }

    fn string(&mut self) -> Result<String> {
        if self.text.get(self.at) != Some(&b'"') {
            return Err(self.error("expected a string"));
        }
        self.at += 1;
        let mut out = Vec::new();
        loop {
            let byte = *self.text.get(self.at).ok_or_else(|| self.error("unterminated string"))?;
            self.at += 1;
            match byte {
                b'"' => return Ok(String::from_utf8(out)?),
                b'\\' => {
                    let escape = *self.text.get(self.at).ok_or_else(|| self.error("unterminated escape"))?;
                    self.at += 1;
                    let decoded = match escape {
                        b'"' | b'\\' | b'/' => escape as char,
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return Err(self.error("unknown escape")),
                    };
                    out.extend_from_slice(decoded.encode_utf8(&mut [0; 4]).as_bytes());
                }
                _ => out.push(byte),
            }
        }
    }

    /// The character of `\uXXXX` (the `\u` already read), with its low surrogate if any.
    fn unicode_escape(&mut self) -> Result<char> {
        let high = self.hex4()?;
        let code = if (0xD800..0xDC00).contains(&high) && self.text[self.at..].starts_with(b"\\u") {
            self.at += 2;
            let low = self.hex4()?;
            0x10000 + ((high - 0xD800) << 10) + low.wrapping_sub(0xDC00)
        } else {
            high
        };
        Ok(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER))
    }

    fn hex4(&mut self) -> Result<u32> {
        let digits = self.text.get(self.at..self.at + 4).ok_or_else(|| self.error("short \\u escape"))?;
        let code = u32::from_str_radix(std::str::from_utf8(digits)?, 16).map_err(|_| self.error("bad \\u escape"))?;
        self.at += 4;
        Ok(code)
    }

    fn number(&mut self) -> Result<Json> {
        let start = self.at;
        while self.text.get(self.at).is_some_and(|b| b.is_ascii_digit() || b"+-.eE".contains(b)) {
            self.at += 1;
        }
        let text = std::str::from_utf8(&self.text[start..self.at])?;
        Ok(Json::Number(text.parse().map_err(|_| self.error("bad number"))?))
    }

    fn word(&mut self) -> Result<Json> {
        for (word, value) in [("true", Json::Bool(true)), ("false", Json::Bool(false)), ("null", Json::Null)] {
            if self.text[self.at..].starts_with(word.as_bytes()) {
                self.at += word.len();
                return Ok(value);
            }
        }
        Err(self.error("expected a value"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_the_peers_print() {
        let json =
            Json::parse(r#" {"peer":"redis-py","holds":[[1,2],[]],"elapsed_ns":1006908435,"x":[true,null,-1.5e3]} "#)
                .unwrap();
        assert_eq!(json.get("peer").unwrap().as_str().unwrap(), "redis-py");
        let holds = json.get("holds").unwrap().as_array().unwrap();
        assert_eq!(holds[0].as_array().unwrap()[1].as_u64().unwrap(), 2);
        assert!(holds[1].as_array().unwrap().is_empty());
        assert_eq!(json.get("elapsed_ns").unwrap().as_u64().unwrap(), 1_006_908_435);
        assert_eq!(json.get("x").unwrap(), &Json::Array(vec![Json::Bool(true), Json::Null, Json::Number(-1500.0)]));
        assert!(json.get("missing").is_err());
    }

    #[test]
    fn strings_unescape() {
        let json = Json::parse(r#""a\"b\\c\n\u00e9\ud83d\ude00""#).unwrap();
        assert_eq!(json.as_str().unwrap(), "a\"b\\c\né😀");
    }

    #[test]
    fn rejects_broken_json() {
        for text in ["", "{", "[1,]", r#"{"a" 1}"#, "tru", "1 2", r#""abc"#] {
            assert!(Json::parse(text).is_err(), "{text:?}");
        }
    }
}
