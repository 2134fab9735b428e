// DynamoDB's expression syntax, built with a placeholder for every name and value: the conditions
// that make a write land only on the row as it was read, and an UpdateItem's SET and REMOVE clauses.
import type { AttributeValue, UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import { timestampAttributes } from './codec.js';

/** The condition part of a write: `ConditionExpression` with its names and values. */
export interface ConditionInput {
  readonly ConditionExpression?: string;
  readonly ExpressionAttributeNames: Record<string, string>;
  readonly ExpressionAttributeValues?: Record<string, AttributeValue>;
}

/** Builds a write's condition, every name and value a placeholder. */
export class ConditionExpression {
  protected readonly names: Record<string, string> = {};
  protected readonly values: Record<string, AttributeValue> = {};
  readonly #conditions: string[] = [];

  name(attribute: string): string {
    this.names[`#${attribute}`] = attribute;
    return `#${attribute}`;
  }

  value(key: string, value: AttributeValue): string {
    this.values[`:${key}`] = value;
    return `:${key}`;
  }

  condition(expression: string): void {
    this.#conditions.push(expression);
  }

  /** Conditions on `attribute` still being `read` (absent, NULL, or that value). */
  unchanged(attribute: string, read: AttributeValue | undefined): void {
    const name = this.name(attribute);
    if (read === undefined) this.condition(`attribute_not_exists(${name})`);
    else if (read.NULL === true) this.condition(`attribute_type(${name}, ${this.value('null', { S: 'NULL' })})`);
    else this.condition(`${name} = ${this.value(`was${attribute}`, read)}`);
  }

  /** The conditions (all of them must hold), names and values, as a write's parameters. */
  conditionInput(): ConditionInput {
    return {
      ...(this.#conditions.length > 0 ? { ConditionExpression: this.#conditions.map((c) => `(${c})`).join(' AND ') } : {}),
      ExpressionAttributeNames: this.names,
      ...(Object.keys(this.values).length > 0 ? { ExpressionAttributeValues: this.values } : {}),
    };
  }
}

/** Builds an UpdateItem's expressions and condition with a placeholder for every name and value. */
export class UpdateExpression extends ConditionExpression {
  readonly #sets: string[] = [];
  readonly #removes: string[] = [];
  readonly #adds: string[] = [];
  readonly #deletes: string[] = [];

  set(attribute: string, value: AttributeValue): void {
    this.#sets.push(`${this.name(attribute)} = ${this.value(attribute, value)}`);
  }

  /** `<name>` (N, Unix ns) and `<name>RFC` (S), as the Go kinsumer writes timestamps. */
  setTimestamp(attribute: string, ms: number): void {
    for (const [name, value] of Object.entries(timestampAttributes(attribute, ms))) this.set(name, value);
  }

  remove(attribute: string): void {
    this.#removes.push(this.name(attribute));
  }

  /** `ADD`: a number added to, or elements added to a set (created if absent). */
  add(attribute: string, value: AttributeValue): void {
    this.#adds.push(`${this.name(attribute)} ${this.value(`add${attribute}`, value)}`);
  }

  /** `DELETE`: elements taken out of a set (the attribute goes when it empties). */
  delete(attribute: string, value: AttributeValue): void {
    this.#deletes.push(`${this.name(attribute)} ${this.value(`delete${attribute}`, value)}`);
  }

  input(table: string, key: Record<string, AttributeValue>): UpdateItemCommandInput {
    const clauses = [
      ...(this.#sets.length > 0 ? [`SET ${this.#sets.join(', ')}`] : []),
      ...(this.#removes.length > 0 ? [`REMOVE ${this.#removes.join(', ')}`] : []),
      ...(this.#adds.length > 0 ? [`ADD ${this.#adds.join(', ')}`] : []),
      ...(this.#deletes.length > 0 ? [`DELETE ${this.#deletes.join(', ')}`] : []),
    ];
    return { TableName: table, Key: key, UpdateExpression: clauses.join(' '), ...this.conditionInput() };
  }
}
