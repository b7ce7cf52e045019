// JQL tokenizer and parser: clauses joined by AND/OR (AND binds tighter), NOT, parentheses,
// operators = != > < >= <= ~ !~ IN, NOT IN, IS [NOT] EMPTY, functions, lists and ORDER BY.

/** A JQL problem; each message is one entry of Jira's `errorMessages`. */
export class JqlError extends Error {
  constructor(readonly messages: string[]) {
    super(messages.join(' '));
  }
}

export type Operator = '=' | '!=' | '>' | '<' | '>=' | '<=' | '~' | '!~' | 'in' | 'not in' | 'is' | 'is not';

export type Operand =
  | { kind: 'value'; text: string; pos: number }
  | { kind: 'empty' }
  | { kind: 'func'; name: string; args: string[]; pos: number }
  | { kind: 'list'; items: Operand[] };

export type Clause =
  { kind: 'and' | 'or'; parts: Clause[] } | { kind: 'not'; clause: Clause } | { kind: 'term'; field: string; op: Operator; operand: Operand; pos: number };

export interface OrderKey {
  field: string;
  desc: boolean;
  pos: number;
}

export interface JqlQuery {
  where: Clause | null;
  orderBy: OrderKey[];
}

type TokenKind = 'word' | 'string' | 'op' | '(' | ')' | ',';

interface Token {
  kind: TokenKind;
  text: string;
  pos: number;
}

const KEYWORDS = new Set(['and', 'or', 'not', 'in', 'is', 'empty', 'null', 'order', 'by', 'asc', 'desc', 'was', 'changed']);
const RESERVED = new Set(['%', '^', '$', '#', ';', '{', '}']);
const SYMBOL_WORDS: Record<string, string> = { '&&': 'AND', '&': 'AND', '||': 'OR', '|': 'OR', '!': 'NOT' };
const VALID_OPERATORS = "The valid operators are '=', '!=', '<', '>', '<=', '>=', '~', '!~', 'IN', 'NOT IN', 'IS' and 'IS NOT'.";

/** "(line 1, character 9)" as Jira reports positions (both 1-based). */
function where(src: string, pos: number): string {
  const before = src.slice(0, pos).split('\n');
  return `(line ${before.length}, character ${before[before.length - 1].length + 1})`;
}

function queryError(src: string, message: string, pos?: number): JqlError {
  return new JqlError([`Error in the JQL Query: ${message}${pos === undefined ? '' : ` ${where(src, pos)}`}`]);
}

function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '(' || c === ')' || c === ',') {
      tokens.push({ kind: c, text: c, pos: i++ });
    } else if (c === '"' || c === "'") {
      const start = i;
      let text = '';
      i++;
      while (i < src.length && src[i] !== c) {
        if (src[i] === '\\' && i + 1 < src.length) {
          const next = src[i + 1];
          if (next === 'u' && /^[0-9a-fA-F]{4}$/.test(src.slice(i + 2, i + 6))) {
            text += String.fromCharCode(parseInt(src.slice(i + 2, i + 6), 16));
            i += 6;
            continue;
          }
          text += next === 'n' ? '\n' : next === 't' ? '\t' : next;
          i += 2;
        } else {
          text += src[i++];
        }
      }
      if (i >= src.length) throw queryError(src, `The quoted string '${text}' has not been completed.`, start);
      i++;
      tokens.push({ kind: 'string', text, pos: start });
    } else {
      const two = src.slice(i, i + 2);
      if (['!=', '!~', '>=', '<=', '&&', '||'].includes(two)) {
        tokens.push(SYMBOL_WORDS[two] ? { kind: 'word', text: SYMBOL_WORDS[two], pos: i } : { kind: 'op', text: two, pos: i });
        i += 2;
      } else if (['=', '~', '>', '<'].includes(c)) {
        tokens.push({ kind: 'op', text: c, pos: i++ });
      } else if (SYMBOL_WORDS[c]) {
        tokens.push({ kind: 'word', text: SYMBOL_WORDS[c], pos: i++ });
      } else if (RESERVED.has(c)) {
        const code = c.charCodeAt(0).toString(16).padStart(4, '0');
        throw queryError(src, `The character '${c}' is a reserved JQL character. You must enclose it in a string or use the escape '\\u${code}' instead.`, i);
      } else {
        const start = i;
        while (i < src.length && !/[\s()=!<>~,"'&|]/.test(src[i]) && !RESERVED.has(src[i])) i++;
        tokens.push({ kind: 'word', text: src.slice(start, i), pos: start });
      }
    }
  }
  return tokens;
}

/** Parses JQL; throws JqlError with Jira-like messages. Empty input gives no clause and no ordering. */
export function parseJql(src: string): JqlQuery {
  return new Parser(src).parseQuery();
}

class Parser {
  private readonly tokens: Token[];
  private i = 0;

  constructor(private readonly src: string) {
    this.tokens = tokenize(src);
  }

  private peek(): Token | undefined {
    return this.tokens[this.i];
  }

  private isWord(token: Token | undefined, word: string): boolean {
    return token?.kind === 'word' && token.text.toLowerCase() === word;
  }

  private fail(message: string, token: Token | undefined, atEnd: string): never {
    if (!token) throw queryError(this.src, atEnd);
    throw queryError(this.src, message.replace('%s', token.text), token.pos);
  }

  parseQuery(): JqlQuery {
    let where: Clause | null = null;
    if (this.peek() && !this.isWord(this.peek(), 'order')) where = this.parseOr();
    const next = this.peek();
    if (next && !this.isWord(next, 'order')) this.fail("Expecting either 'OR' or 'AND' but got '%s'.", next, '');
    return { where, orderBy: next ? this.parseOrderBy() : [] };
  }

  private parseOr(): Clause {
    const parts = [this.parseAnd()];
    while (this.isWord(this.peek(), 'or')) {
      this.i++;
      parts.push(this.parseAnd());
    }
    return parts.length === 1 ? parts[0] : { kind: 'or', parts };
  }

  private parseAnd(): Clause {
    const parts = [this.parseNot()];
    while (this.isWord(this.peek(), 'and')) {
      this.i++;
      parts.push(this.parseNot());
    }
    return parts.length === 1 ? parts[0] : { kind: 'and', parts };
  }

  private parseNot(): Clause {
    const token = this.peek();
    if (this.isWord(token, 'not')) {
      this.i++;
      return { kind: 'not', clause: this.parseNot() };
    }
    if (token?.kind === '(') {
      this.i++;
      const inner = this.parseOr();
      const close = this.peek();
      if (close?.kind !== ')') this.fail("Expecting ')' but got '%s'.", close, "Expecting ')' before the end of the query.");
      this.i++;
      return inner;
    }
    return this.parseTerm();
  }

  private fieldName(): Token {
    const token = this.peek();
    const isName = token && (token.kind === 'string' || (token.kind === 'word' && !KEYWORDS.has(token.text.toLowerCase())));
    if (!isName) this.fail("Expecting a field name but got '%s'.", token, 'Expecting a field name before the end of the query.');
    this.i++;
    return token!;
  }

  private parseTerm(): Clause {
    const field = this.fieldName();
    const op = this.parseOperator();
    const operand = op === 'is' || op === 'is not' ? this.parseEmpty() : op === 'in' || op === 'not in' ? this.parseList() : this.parseOperand();
    return { kind: 'term', field: field.text, op, operand, pos: field.pos };
  }

  private parseOperator(): Operator {
    const token = this.peek();
    const expecting = `Expecting operator but got '%s'. ${VALID_OPERATORS}`;
    const atEnd = `Expecting operator before the end of the query. ${VALID_OPERATORS}`;
    if (!token) this.fail(expecting, token, atEnd);
    this.i++;
    if (token!.kind === 'op') return token!.text as Operator;
    const word = token!.kind === 'word' ? token!.text.toLowerCase() : '';
    if (word === 'in') return 'in';
    if (word === 'is') {
      if (this.isWord(this.peek(), 'not')) {
        this.i++;
        return 'is not';
      }
      return 'is';
    }
    if (word === 'not' && this.isWord(this.peek(), 'in')) {
      this.i++;
      return 'not in';
    }
    if (word === 'was' || word === 'changed')
      throw new JqlError([`History searches with the operator '${token!.text.toUpperCase()}' are not supported by this site.`]);
    this.i--;
    return this.fail(expecting, token, atEnd);
  }

  private parseEmpty(): Operand {
    const token = this.peek();
    if (!this.isWord(token, 'empty') && !this.isWord(token, 'null')) {
      this.fail("Expecting 'EMPTY' but got '%s'.", token, "Expecting 'EMPTY' before the end of the query.");
    }
    this.i++;
    return { kind: 'empty' };
  }

  private parseList(): Operand {
    const open = this.peek();
    if (open?.kind === 'word' && this.tokens[this.i + 1]?.kind === '(') return this.parseOperand(); // a function
    if (open?.kind !== '(')
      this.fail("Expecting a list of values or a function but got '%s'.", open, 'Expecting a list of values before the end of the query.');
    this.i++;
    const items = [this.parseOperand()];
    while (this.peek()?.kind === ',') {
      this.i++;
      items.push(this.parseOperand());
    }
    const close = this.peek();
    if (close?.kind !== ')') this.fail("Expecting ')' but got '%s'.", close, "Expecting ')' before the end of the query.");
    this.i++;
    return { kind: 'list', items };
  }

  private parseOperand(): Operand {
    const token = this.peek();
    const atEnd = 'Expecting either a value, list or function before the end of the query.';
    if (!token || (token.kind !== 'word' && token.kind !== 'string')) {
      this.fail("Expecting either a value, list or function but got '%s'.", token, atEnd);
    }
    this.i++;
    if (token!.kind === 'string') return { kind: 'value', text: token!.text, pos: token!.pos };
    const lower = token!.text.toLowerCase();
    if (lower === 'empty' || lower === 'null') return { kind: 'empty' };
    if (KEYWORDS.has(lower)) {
      this.i--;
      this.fail(
        `Expecting either a value, list or function but got '%s'. You must surround '%s' in quotation marks to use it as a value.`.replace(/%s/g, token!.text),
        token,
        atEnd,
      );
    }
    if (this.peek()?.kind === '(') return this.parseFunction(token!);
    return { kind: 'value', text: token!.text, pos: token!.pos };
  }

  private parseFunction(name: Token): Operand {
    this.i++; // (
    const args: string[] = [];
    while (this.peek() && this.peek()!.kind !== ')') {
      const arg = this.peek()!;
      if (arg.kind !== 'word' && arg.kind !== 'string') this.fail("Expecting a function argument but got '%s'.", arg, '');
      args.push(arg.text);
      this.i++;
      if (this.peek()?.kind === ',') this.i++;
    }
    if (!this.peek()) throw queryError(this.src, "Expecting ')' before the end of the query.");
    this.i++;
    return { kind: 'func', name: name.text, args, pos: name.pos };
  }

  private parseOrderBy(): OrderKey[] {
    this.i++; // ORDER
    const by = this.peek();
    if (!this.isWord(by, 'by')) this.fail("Expecting 'BY' but got '%s'.", by, "Expecting 'BY' before the end of the query.");
    this.i++;
    const keys: OrderKey[] = [];
    for (;;) {
      const field = this.fieldName();
      let desc = false;
      if (this.isWord(this.peek(), 'asc') || this.isWord(this.peek(), 'desc')) desc = this.tokens[this.i++].text.toLowerCase() === 'desc';
      keys.push({ field: field.text, desc, pos: field.pos });
      const next = this.peek();
      if (!next) return keys;
      if (next.kind !== ',') this.fail("Expecting either ',' or the end of the query but got '%s'.", next, '');
      this.i++;
    }
  }
}
