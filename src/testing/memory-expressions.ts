// A subset of DynamoDB's expression language, evaluated over items in memory (the in-memory item
// store's conditions and updates). What it evaluates:
//
//   conditions   a = b, <>, <, <=, >, >=, a BETWEEN b AND c, a IN (b, c, ...), AND, OR, NOT, ( ),
//                attribute_exists(p), attribute_not_exists(p), attribute_type(p, :t), begins_with(p, v),
//                contains(p, v), size(p)
//   updates      SET p = v, SET p = v + w, SET p = v - w (v, w: a path, :value, if_not_exists(p, v),
//                list_append(v, w)), REMOVE p, ADD p :n (a number or a set), DELETE p :set
//   paths        top-level attributes, by name or #placeholder
//
// Anything else (nested paths `a.b`, list elements `a[0]`, other functions) is refused with
// `UnsupportedExpressionError` rather than evaluated wrongly. Malformed expressions and missing
// placeholders are DynamoDB's `ValidationException`; a type mismatch found while applying (ADD onto
// a string, arithmetic on a non-number) is the action's `ValidationError`.
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { awsError } from './memory-stream.js';

type Item = Record<string, AttributeValue>;

/** An expression this in-memory evaluator cannot evaluate (it is valid DynamoDB, or may be). */
export class UnsupportedExpressionError extends Error {
  constructor(what: string) {
    super(`the in-memory DynamoDB store cannot evaluate ${what}; use DynamoDB Local for it`);
    this.name = 'UnsupportedExpressionError';
  }
}

/** A type mismatch found while evaluating an action: its `ValidationError` cancellation reason. */
export class ActionValidationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ActionValidationError';
  }
}

/** Placeholders of an expression. */
export interface ExpressionContext {
  readonly names?: Record<string, string> | undefined;
  readonly values?: Record<string, AttributeValue> | undefined;
}

const invalid = (message: string): Error => awsError('ValidationException', { message: `Invalid expression: ${message}` });

// ------------------------------------------------------------------ tokens

type Token = { readonly kind: 'name' | 'value' | 'word' | 'op'; readonly text: string };

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  const pattern = /\s*(?:(<>|<=|>=|[=<>+\-(),])|(#[A-Za-z0-9_]+)|(:[A-Za-z0-9_]+)|([A-Za-z_][A-Za-z0-9_]*)|([.[\]])|(\S))/y;
  pattern.lastIndex = 0;
  while (pattern.lastIndex < text.length) {
    const match = pattern.exec(text);
    if (match === null) break;
    const [, op, name, value, word, nested, other] = match;
    if (nested !== undefined) throw new UnsupportedExpressionError(`the nested path in "${text}"`);
    if (other !== undefined) throw invalid(`unexpected "${other}" in "${text}"`);
    if (op !== undefined) tokens.push({ kind: 'op', text: op });
    else if (name !== undefined) tokens.push({ kind: 'name', text: name });
    else if (value !== undefined) tokens.push({ kind: 'value', text: value });
    else if (word !== undefined) tokens.push({ kind: 'word', text: word });
    if (/^\s*$/.test(text.slice(pattern.lastIndex))) break;
  }
  return tokens;
}

class Tokens {
  #at = 0;
  constructor(readonly list: readonly Token[], readonly source: string) {}
  peek(offset = 0): Token | undefined {
    return this.list[this.#at + offset];
  }
  next(): Token {
    const token = this.list[this.#at];
    if (token === undefined) throw invalid(`"${this.source}" ends too early`);
    this.#at += 1;
    return token;
  }
  isWord(word: string): boolean {
    const token = this.peek();
    return token?.kind === 'word' && token.text.toUpperCase() === word;
  }
  expect(text: string): void {
    const token = this.next();
    if (token.text.toUpperCase() !== text) throw invalid(`expected "${text}" in "${this.source}", found "${token.text}"`);
  }
  get done(): boolean {
    return this.#at >= this.list.length;
  }
}

// ------------------------------------------------------------------ operands

type Operand = (item: Item | undefined) => AttributeValue | undefined;

function path(tokens: Tokens, context: ExpressionContext): string {
  const token = tokens.next();
  if (token.kind === 'name') {
    const name = context.names?.[token.text];
    if (name === undefined) throw invalid(`${token.text} is not in ExpressionAttributeNames`);
    return name;
  }
  if (token.kind === 'word') return token.text;
  throw invalid(`expected an attribute name in "${tokens.source}", found "${token.text}"`);
}

function operand(tokens: Tokens, context: ExpressionContext): Operand {
  const token = tokens.peek();
  if (token?.kind === 'value') {
    tokens.next();
    const value = context.values?.[token.text];
    if (value === undefined) throw invalid(`${token.text} is not in ExpressionAttributeValues`);
    return () => value;
  }
  if (token?.kind === 'word' && tokens.peek(1)?.text === '(') {
    const fn = token.text;
    tokens.next();
    tokens.expect('(');
    if (fn === 'size') {
      const name = path(tokens, context);
      tokens.expect(')');
      return (item) => {
        const value = item?.[name];
        return value === undefined ? undefined : { N: String(sizeOf(value)) };
      };
    }
    if (fn === 'if_not_exists') {
      const name = path(tokens, context);
      tokens.expect(',');
      const fallback = operand(tokens, context);
      tokens.expect(')');
      return (item) => item?.[name] ?? fallback(item);
    }
    if (fn === 'list_append') {
      const a = operand(tokens, context);
      tokens.expect(',');
      const b = operand(tokens, context);
      tokens.expect(')');
      return (item) => {
        const x = a(item);
        const y = b(item);
        if (x?.L === undefined || y?.L === undefined) throw new ActionValidationError('list_append needs two lists');
        return { L: [...x.L, ...y.L] };
      };
    }
    throw new UnsupportedExpressionError(`the function ${fn}() as an operand`);
  }
  const name = path(tokens, context);
  return (item) => item?.[name];
}

// ------------------------------------------------------------------ conditions

type Condition = (item: Item | undefined) => boolean;

/** Parses a condition expression; the result tells whether it holds for an item (`undefined`: none). */
export function parseCondition(text: string, context: ExpressionContext): Condition {
  const tokens = new Tokens(tokenize(text), text);
  const condition = orExpression(tokens, context);
  if (!tokens.done) throw invalid(`unexpected "${tokens.peek()?.text}" in "${text}"`);
  return condition;
}

function orExpression(tokens: Tokens, context: ExpressionContext): Condition {
  const parts = [andExpression(tokens, context)];
  while (tokens.isWord('OR')) {
    tokens.next();
    parts.push(andExpression(tokens, context));
  }
  return parts.length === 1 ? parts[0] as Condition : (item) => parts.some((part) => part(item));
}

function andExpression(tokens: Tokens, context: ExpressionContext): Condition {
  const parts = [notExpression(tokens, context)];
  while (tokens.isWord('AND')) {
    tokens.next();
    parts.push(notExpression(tokens, context));
  }
  return parts.length === 1 ? parts[0] as Condition : (item) => parts.every((part) => part(item));
}

function notExpression(tokens: Tokens, context: ExpressionContext): Condition {
  if (tokens.isWord('NOT')) {
    tokens.next();
    const inner = notExpression(tokens, context);
    return (item) => !inner(item);
  }
  return primary(tokens, context);
}

const PREDICATES = new Set(['attribute_exists', 'attribute_not_exists', 'attribute_type', 'begins_with', 'contains']);

function primary(tokens: Tokens, context: ExpressionContext): Condition {
  const token = tokens.peek();
  if (token?.text === '(') {
    tokens.next();
    const inner = orExpression(tokens, context);
    tokens.expect(')');
    return inner;
  }
  if (token?.kind === 'word' && tokens.peek(1)?.text === '(' && PREDICATES.has(token.text)) {
    tokens.next();
    tokens.expect('(');
    const name = path(tokens, context);
    let argument: Operand | undefined;
    if (tokens.peek()?.text === ',') {
      tokens.next();
      argument = operand(tokens, context);
    }
    tokens.expect(')');
    return predicate(token.text, name, argument, tokens.source);
  }
  const left = operand(tokens, context);
  if (tokens.isWord('BETWEEN')) {
    tokens.next();
    const low = operand(tokens, context);
    tokens.expect('AND');
    const high = operand(tokens, context);
    return (item) => compare(left(item), low(item), '>=') && compare(left(item), high(item), '<=');
  }
  if (tokens.isWord('IN')) {
    tokens.next();
    tokens.expect('(');
    const options = [operand(tokens, context)];
    while (tokens.peek()?.text === ',') {
      tokens.next();
      options.push(operand(tokens, context));
    }
    tokens.expect(')');
    return (item) => options.some((option) => compare(left(item), option(item), '='));
  }
  const op = tokens.next();
  if (!['=', '<>', '<', '<=', '>', '>='].includes(op.text)) throw invalid(`expected a comparison in "${tokens.source}", found "${op.text}"`);
  const right = operand(tokens, context);
  return (item) => compare(left(item), right(item), op.text);
}

function predicate(fn: string, name: string, argument: Operand | undefined, source: string): Condition {
  const needs = fn === 'attribute_type' || fn === 'begins_with' || fn === 'contains';
  if (needs !== (argument !== undefined)) throw invalid(`wrong arguments to ${fn} in "${source}"`);
  return (item) => {
    const value = item?.[name];
    const other = argument?.(item);
    switch (fn) {
      case 'attribute_exists': return value !== undefined;
      case 'attribute_not_exists': return value === undefined;
      case 'attribute_type': return value !== undefined && other?.S !== undefined && typeOf(value) === other.S;
      case 'begins_with':
        if (value?.S !== undefined && other?.S !== undefined) return value.S.startsWith(other.S);
        return false;
      default: // contains
        if (value?.S !== undefined && other?.S !== undefined) return value.S.includes(other.S);
        if (value?.SS !== undefined && other?.S !== undefined) return value.SS.includes(other.S);
        if (value?.NS !== undefined && other?.N !== undefined) return value.NS.some((n) => compareNumbers(n, other.N) === 0);
        if (value?.L !== undefined && other !== undefined) return value.L.some((element) => compare(element, other, '='));
        return false;
    }
  };
}

// ------------------------------------------------------------------ updates

type Update = (item: Item) => void;

/** Parses an update expression; the result changes an item (a copy the caller owns) in place. */
export function parseUpdate(text: string, context: ExpressionContext): { readonly apply: Update; readonly paths: readonly string[] } {
  const tokens = new Tokens(tokenize(text), text);
  const steps: Update[] = [];
  const paths: string[] = [];
  const seen = new Set<string>();
  if (tokens.done) throw invalid('an empty update expression');
  while (!tokens.done) {
    const clause = tokens.next();
    const kind = clause.text.toUpperCase();
    if (clause.kind !== 'word' || !['SET', 'REMOVE', 'ADD', 'DELETE'].includes(kind)) throw invalid(`expected SET, REMOVE, ADD or DELETE in "${text}", found "${clause.text}"`);
    if (seen.has(kind)) throw invalid(`the ${kind} clause twice in "${text}"`);
    seen.add(kind);
    for (;;) {
      const name = path(tokens, context);
      if (paths.includes(name)) throw invalid(`two actions on the attribute ${name} in "${text}"`);
      paths.push(name);
      steps.push(updateStep(kind, name, tokens, context));
      if (tokens.peek()?.text !== ',') break;
      tokens.next();
    }
  }
  return { apply: (item) => { for (const step of steps) step(item); }, paths };
}

function updateStep(kind: string, name: string, tokens: Tokens, context: ExpressionContext): Update {
  if (kind === 'REMOVE') return (item) => { delete item[name]; };
  if (kind === 'SET') {
    tokens.expect('=');
    const first = operand(tokens, context);
    const op = tokens.peek()?.text;
    if (op === '+' || op === '-') {
      tokens.next();
      const second = operand(tokens, context);
      return (item) => { item[name] = { N: arithmetic(first(item), second(item), op) }; };
    }
    return (item) => {
      const value = first(item);
      if (value === undefined) throw new ActionValidationError('The provided expression refers to an attribute that does not exist in the item');
      item[name] = value;
    };
  }
  const value = operand(tokens, context);
  if (kind === 'ADD') {
    return (item) => {
      const current = item[name];
      const amount = value(item) as AttributeValue;
      if (amount.N !== undefined) {
        if (current !== undefined && current.N === undefined) throw new ActionValidationError('An operand in the update expression has an incorrect data type');
        item[name] = { N: arithmetic(current ?? { N: '0' }, amount, '+') };
        return;
      }
      const set = setOf(amount);
      if (set === undefined) throw invalid(`ADD takes a number or a set (attribute ${name})`);
      if (current !== undefined && setOf(current)?.kind !== set.kind) throw new ActionValidationError('An operand in the update expression has an incorrect data type');
      item[name] = makeSet(set.kind, [...new Set([...(current === undefined ? [] : setOf(current)?.members ?? []), ...set.members])]);
    };
  }
  return (item) => { // DELETE
    const current = item[name];
    const removed = setOf(value(item) as AttributeValue);
    if (removed === undefined) throw invalid(`DELETE takes a set (attribute ${name})`);
    if (current === undefined) return;
    const members = setOf(current);
    if (members?.kind !== removed.kind) throw new ActionValidationError('An operand in the update expression has an incorrect data type');
    const left = members.members.filter((member) => !removed.members.includes(member));
    if (left.length === 0) delete item[name];
    else item[name] = makeSet(members.kind, left);
  };
}

// ------------------------------------------------------------------ values

function typeOf(value: AttributeValue): string {
  for (const type of ['S', 'N', 'B', 'SS', 'NS', 'BS', 'M', 'L', 'NULL', 'BOOL'] as const) if (value[type] !== undefined) return type;
  return '?';
}

function sizeOf(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S, 'utf8');
  if (value.B !== undefined) return value.B.byteLength;
  const set = setOf(value);
  if (set !== undefined) return set.members.length;
  if (value.L !== undefined) return value.L.length;
  if (value.M !== undefined) return Object.keys(value.M).length;
  throw new ActionValidationError('size() of a value that has no size');
}

function setOf(value: AttributeValue): { kind: 'SS' | 'NS' | 'BS'; members: string[] } | undefined {
  if (value.SS !== undefined) return { kind: 'SS', members: [...value.SS] };
  if (value.NS !== undefined) return { kind: 'NS', members: [...value.NS] };
  if (value.BS !== undefined) return { kind: 'BS', members: value.BS.map((b) => Buffer.from(b).toString('base64')) };
  return undefined;
}

function makeSet(kind: 'SS' | 'NS' | 'BS', members: string[]): AttributeValue {
  if (kind === 'SS') return { SS: members };
  if (kind === 'NS') return { NS: members };
  return { BS: members.map((m) => new Uint8Array(Buffer.from(m, 'base64'))) };
}

function compare(a: AttributeValue | undefined, b: AttributeValue | undefined, op: string): boolean {
  if (a === undefined || b === undefined) return false;
  const type = typeOf(a);
  if (type !== typeOf(b)) return op === '<>';
  let order: number;
  if (type === 'N') order = compareNumbers(a.N as string, b.N as string);
  else if (type === 'S') order = a.S === b.S ? 0 : (a.S as string) < (b.S as string) ? -1 : 1;
  else if (type === 'B') order = Buffer.compare(Buffer.from(a.B as Uint8Array), Buffer.from(b.B as Uint8Array));
  else {
    if (op !== '=' && op !== '<>') return false;
    order = JSON.stringify(a) === JSON.stringify(b) ? 0 : 1;
  }
  switch (op) {
    case '=': return order === 0;
    case '<>': return order !== 0;
    case '<': return order < 0;
    case '<=': return order <= 0;
    case '>': return order > 0;
    default: return order >= 0;
  }
}

/** A decimal number as an integer and a power of ten: exact arithmetic on DynamoDB's 38 digits. */
function decimal(text: string): { value: bigint; scale: number } {
  const match = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text.trim());
  if (match === null) throw new ActionValidationError(`not a number: ${text}`);
  const [, sign, whole = '', fraction = '', exponent = '0'] = match;
  let scale = fraction.length - Number(exponent);
  let value = BigInt(`${whole}${fraction}` || '0');
  if (scale < 0) {
    value *= 10n ** BigInt(-scale);
    scale = 0;
  }
  return { value: sign === '-' ? -value : value, scale };
}

function align(a: string, b: string): [bigint, bigint, number] {
  const x = decimal(a);
  const y = decimal(b);
  const scale = Math.max(x.scale, y.scale);
  return [x.value * 10n ** BigInt(scale - x.scale), y.value * 10n ** BigInt(scale - y.scale), scale];
}

function compareNumbers(a: string, b: string): number {
  const [x, y] = align(a, b);
  return x === y ? 0 : x < y ? -1 : 1;
}

function arithmetic(a: AttributeValue | undefined, b: AttributeValue | undefined, op: '+' | '-'): string {
  if (a?.N === undefined || b?.N === undefined) throw new ActionValidationError('An operand in the update expression has an incorrect data type');
  const [x, y, scale] = align(a.N, b.N);
  const sum = op === '+' ? x + y : x - y;
  if (scale === 0) return sum.toString();
  const negative = sum < 0n;
  const digits = (negative ? -sum : sum).toString().padStart(scale + 1, '0');
  const text = `${digits.slice(0, -scale)}.${digits.slice(-scale)}`.replace(/\.?0+$/, '');
  return `${negative ? '-' : ''}${text}`;
}
