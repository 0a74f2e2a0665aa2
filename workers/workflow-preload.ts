/**
 * Run once in each workflow thread's V8 context before any workflow starts
 * (the bundle's `preloadModules`): zod's modules land in the shared module
 * cache, so a new job does not evaluate zod again in its own context.
 *
 * Naming `zod` there is not enough: zod declares its modules free of side
 * effects, and the bundler drops an import whose value goes unused and
 * skips the re-exported modules nobody reads. Reading every export keeps
 * them all, loaded by the same path the workflows take.
 *
 * The SDK then freezes what was loaded, and zod fills things in on first
 * use: the default locale and memoizer in its global config (and whether
 * `new Function` may be used, which only its JIT asks). One parse of an
 * object that fails fills them now, while they can still be written.
 *
 * zod's JIT is off in workflows: schemas built inside a job are its own
 * and parsed a few times each, so compiling a fast path per schema and job
 * cost more than it saved (bench `parked`, 300 jobs, A/B twice, measured
 * when airlock's own modules were still evaluated per job: agent CPU per
 * parked job 74 → 63 and 65 → 60 ms, approve and complete all 15.4 → 11.3
 * and 13.7 → 11.8 s). The workflows themselves are preloaded after this
 * (workflow-share.ts).
 */
import * as z from 'zod';

z.config({ jitless: true });

Object.keys(z);
z.object({ warm: z.array(z.string().min(1)) }).safeParse({ warm: [''] });
