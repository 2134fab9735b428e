import type { AttributeValue } from '@aws-sdk/client-dynamodb';

// DynamoDB's item size, as its documentation counts it ("Item sizes and formats"): each attribute
// is its name's UTF-8 bytes plus its value: a string's UTF-8 bytes, a number's significant digits
// over two plus one, one byte for NULL and BOOL, a list or map 3 bytes plus one byte per element
// plus the elements (map keys counted as names).

const utf8 = (text: string) => Buffer.byteLength(text, 'utf8');

function numberSize(text: string): number {
  const digits = text.replace(/^-/, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(digits.length / 2) + 1;
}

function valueSize(value: AttributeValue): number {
  if (value.S !== undefined) return utf8(value.S);
  if (value.N !== undefined) return numberSize(value.N);
  if (value.B !== undefined) return value.B.length;
  if (value.NULL !== undefined || value.BOOL !== undefined) return 1;
  if (value.SS !== undefined) return value.SS.reduce((sum, s) => sum + utf8(s), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, n) => sum + numberSize(n), 0);
  if (value.L !== undefined) return 3 + value.L.reduce((sum, element) => sum + 1 + valueSize(element), 0);
  if (value.M !== undefined) return 3 + Object.entries(value.M).reduce((sum, [key, element]) => sum + 1 + utf8(key) + valueSize(element), 0);
  throw new Error(`cannot size ${JSON.stringify(value)}`);
}

/** The size DynamoDB counts for `item`, in bytes (the 400 KB limit is 409,600 of them). */
export function itemSize(item: Record<string, AttributeValue>): number {
  return Object.entries(item).reduce((sum, [name, value]) => sum + utf8(name) + valueSize(value), 0);
}
