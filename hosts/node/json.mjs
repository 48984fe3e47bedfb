// A strict JSON reader that accepts exactly what the Rust replayer
// (serde_json plus its order-keeping tree) accepts, and keeps what
// JSON.parse would lose:
//   - integers stay exact (BigInt), so u64 checkpoint ids and times survive;
//   - an integer is "int" only if written without fraction or exponent and
//     it fits i64 or u64; `-0` and bigger integers are "float", like serde_json;
//   - object fields keep their order, and a duplicate key is an error;
//   - a lone UTF-16 surrogate escape (\ud800) is an error;
//   - nesting deeper than serde_json's recursion limit (128) is an error.
//
// Values: {t: 'null'} | {t: 'bool', v} | {t: 'int', v: BigInt} |
// {t: 'float', v: Number, text} | {t: 'str', v} | {t: 'array', v: [...]} |
// {t: 'object', v: [[key, value], ...]}.

const I64_MIN = -(2n ** 63n);
const U64_MAX = 2n ** 64n - 1n;
const RECURSION_LIMIT = 128;

export class JsonError extends Error {
  constructor(message, line, column) {
    super(`${message} at line ${line} column ${column}`);
    this.line = line;
    this.column = column;
  }
}

/** Parses `text` (a JS string already decoded from UTF-8). */
export function parseJson(text) {
  let pos = 0;
  let depth = 0;

  const fail = (message, at = pos) => {
    let line = 1;
    let column = 0;
    for (let i = 0; i < at && i < text.length; i++) {
      if (text.charCodeAt(i) === 0x0a) {
        line++;
        column = 0;
      } else {
        column++;
      }
    }
    throw new JsonError(message, line, column + 1);
  };

  const skipWs = () => {
    for (;;) {
      const c = text.charCodeAt(pos);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) pos++;
      else return;
    }
  };

  const literal = (word, value) => {
    if (text.startsWith(word, pos)) {
      pos += word.length;
      return value;
    }
    fail('expected value');
  };

  const number = () => {
    const start = pos;
    if (text[pos] === '-') pos++;
    if (text[pos] === '0') {
      pos++;
      if (text[pos] >= '0' && text[pos] <= '9') fail('invalid number');
    } else if (text[pos] >= '1' && text[pos] <= '9') {
      while (text[pos] >= '0' && text[pos] <= '9') pos++;
    } else {
      fail('invalid number');
    }
    let integral = true;
    if (text[pos] === '.') {
      integral = false;
      pos++;
      if (!(text[pos] >= '0' && text[pos] <= '9')) fail('invalid number');
      while (text[pos] >= '0' && text[pos] <= '9') pos++;
    }
    if (text[pos] === 'e' || text[pos] === 'E') {
      integral = false;
      pos++;
      if (text[pos] === '+' || text[pos] === '-') pos++;
      if (!(text[pos] >= '0' && text[pos] <= '9')) fail('invalid number');
      while (text[pos] >= '0' && text[pos] <= '9') pos++;
    }
    const raw = text.slice(start, pos);
    if (integral && raw !== '-0') {
      const v = BigInt(raw);
      if (v >= I64_MIN && v <= U64_MAX) return { t: 'int', v };
    }
    const f = Number(raw);
    if (!Number.isFinite(f)) fail('number out of range', start);
    return { t: 'float', v: f, text: raw };
  };

  const hex4 = () => {
    const h = text.slice(pos, pos + 4);
    if (!/^[0-9a-fA-F]{4}$/.test(h)) fail('invalid escape');
    pos += 4;
    return parseInt(h, 16);
  };

  const string = () => {
    pos++; // opening quote
    let out = '';
    let runStart = pos;
    for (;;) {
      if (pos >= text.length) fail('EOF while parsing a string');
      const c = text.charCodeAt(pos);
      if (c === 0x22) {
        out += text.slice(runStart, pos);
        pos++;
        return out;
      }
      if (c < 0x20) fail('control character (\\u0000-\\u001F) found while parsing a string');
      if (c === 0x5c) {
        out += text.slice(runStart, pos);
        pos++;
        const e = text[pos++];
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            const u = hex4();
            if (u >= 0xdc00 && u <= 0xdfff) fail('lone leading surrogate in hex escape');
            if (u >= 0xd800 && u <= 0xdbff) {
              if (text[pos] !== '\\' || text[pos + 1] !== 'u') fail('unexpected end of hex escape');
              pos += 2;
              const lo = hex4();
              if (!(lo >= 0xdc00 && lo <= 0xdfff)) fail('lone leading surrogate in hex escape');
              out += String.fromCharCode(u, lo);
            } else {
              out += String.fromCharCode(u);
            }
            break;
          }
          default:
            fail('invalid escape', pos - 1);
        }
        runStart = pos;
        continue;
      }
      pos++;
    }
  };

  const value = () => {
    skipWs();
    if (pos >= text.length) fail('EOF while parsing a value');
    const c = text[pos];
    if (c === '{' || c === '[') {
      if (++depth > RECURSION_LIMIT) fail('recursion limit exceeded');
      const v = c === '{' ? object() : array();
      depth--;
      return v;
    }
    if (c === '"') return { t: 'str', v: string() };
    if (c === 't') return literal('true', { t: 'bool', v: true });
    if (c === 'f') return literal('false', { t: 'bool', v: false });
    if (c === 'n') return literal('null', { t: 'null' });
    if (c === '-' || (c >= '0' && c <= '9')) return number();
    fail('expected value');
  };

  const array = () => {
    pos++;
    const items = [];
    skipWs();
    if (text[pos] === ']') {
      pos++;
      return { t: 'array', v: items };
    }
    for (;;) {
      items.push(value());
      skipWs();
      if (text[pos] === ',') {
        pos++;
        skipWs();
        if (text[pos] === ']') fail('trailing comma');
        continue;
      }
      if (text[pos] === ']') {
        pos++;
        return { t: 'array', v: items };
      }
      fail(pos >= text.length ? 'EOF while parsing a list' : 'expected `,` or `]`');
    }
  };

  const object = () => {
    pos++;
    const fields = [];
    const seen = new Set();
    skipWs();
    if (text[pos] === '}') {
      pos++;
      return { t: 'object', v: fields };
    }
    for (;;) {
      skipWs();
      if (text[pos] !== '"') fail(pos >= text.length ? 'EOF while parsing an object' : 'key must be a string');
      const key = string();
      if (seen.has(key)) fail(`duplicate field ${JSON.stringify(key)}`);
      seen.add(key);
      skipWs();
      if (text[pos] !== ':') fail(pos >= text.length ? 'EOF while parsing an object' : 'expected `:`');
      pos++;
      fields.push([key, value()]);
      skipWs();
      if (text[pos] === ',') {
        pos++;
        skipWs();
        if (text[pos] === '}') fail('trailing comma');
        continue;
      }
      if (text[pos] === '}') {
        pos++;
        return { t: 'object', v: fields };
      }
      fail(pos >= text.length ? 'EOF while parsing an object' : 'expected `,` or `}`');
    }
  };

  const doc = value();
  skipWs();
  if (pos < text.length) fail('trailing characters');
  return doc;
}
