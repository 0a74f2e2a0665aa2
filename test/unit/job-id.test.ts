import { newJobId } from '../../client/airlock-client/jobs';

describe('job ids people can read', () => {
  test('a few words of the goal, then 48 random bits', () => {
    expect(newJobId('Free some space in the airlock-demo folder: remove old backups')).toMatch(/^job-free-some-space-in-the-airlock-[0-9a-f]{12}$/);
    expect(newJobId('Free some space')).not.toBe(newJobId('Free some space'));
  });

  test('only [a-z0-9-]: accents folded, symbols and other scripts dropped, a secret in the goal masked first', () => {
    expect(newJobId('Café: réparer les accès')).toMatch(/^job-cafe-reparer-les-acces-[0-9a-f]{12}$/);
    expect(newJobId('ゴミを片付けて')).toMatch(/^job-[0-9a-f]{12}$/);
    expect(newJobId('use PASSWORD=hunter2 to log in')).toMatch(/^job-use-password-to-log-in-[0-9a-f]{12}$/);
  });
});
