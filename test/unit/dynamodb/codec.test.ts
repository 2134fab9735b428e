import { expect } from 'chai';
import { AttributeFormatError, readIdList, readInteger, readString } from '../../../src/dynamodb/codec.js';

// One reading policy for every table: absent, NULL (and '') are empty; anything else of the wrong
// type or form is an AttributeFormatError naming the attribute.
describe('codec: reading attributes', () => {
  const problem = (read: () => unknown): [string, string] | undefined => {
    try {
      read();
      return undefined;
    } catch (error) {
      if (!(error instanceof AttributeFormatError)) throw error;
      return [error.attribute, error.problem];
    }
  };

  it('absent and NULL are empty for every reader; an empty string is an empty string attribute', () => {
    for (const item of [{}, { A: { NULL: true as const } }]) {
      expect([readString(item, 'A'), readInteger(item, 'A'), readIdList(item, 'A')]).to.deep.equal([undefined, undefined, undefined]);
    }
    expect(readString({ A: { S: '' } }, 'A')).to.equal(undefined);
  });

  it('reads integers beyond 2^53 exactly, and refuses other types and forms naming the attribute', () => {
    expect(readInteger({ LastUpdate: { N: '1764694956123456789' } }, 'LastUpdate')).to.equal(1_764_694_956_123_456_789n);
    expect(readInteger({ A: { N: '-3' } }, 'A')).to.equal(-3n);
    expect(problem(() => readInteger({ A: { S: '12' } }, 'A'))).to.deep.equal(['A', 'is not a number']);
    expect(problem(() => readInteger({ A: { N: '1.5' } }, 'A'))).to.deep.equal(['A', 'is not an integer: "1.5"']);
    expect(problem(() => readInteger({ A: { N: '1'.repeat(41) } }, 'A'))?.[1]).to.match(/^is not an integer/);
  });

  it('refuses a string attribute of another type', () => {
    expect(readString({ OwnerID: { S: 'me' } }, 'OwnerID')).to.equal('me');
    expect(problem(() => readString({ OwnerID: { N: '1' } }, 'OwnerID'))).to.deep.equal(['OwnerID', 'is not a string']);
    expect(problem(() => readString({ OwnerID: { BOOL: true } }, 'OwnerID'))).to.deep.equal(['OwnerID', 'is not a string']);
  });

  it('reads id lists as L of S (as Go writes ShardIDs) or a string set, sorted and once each; anything else is refused', () => {
    expect(readIdList({ L: { L: [{ S: 'b' }, { S: 'a' }, { S: 'b' }] } }, 'L')).to.deep.equal(['a', 'b']);
    expect(readIdList({ SS: { SS: ['y', 'x'] } }, 'SS')).to.deep.equal(['x', 'y']);
    expect(readIdList({ L: { L: [] } }, 'L')).to.deep.equal([]);
    expect(problem(() => readIdList({ L: { S: 'a' } }, 'L'))).to.deep.equal(['L', 'is not a list']);
    expect(problem(() => readIdList({ L: { L: [{ S: 'a' }, { N: '1' }] } }, 'L'))).to.deep.equal(['L', 'holds something other than ids']);
    expect(problem(() => readIdList({ L: { L: [{ S: '' }] } }, 'L'))).to.deep.equal(['L', 'holds something other than ids']);
  });
});
