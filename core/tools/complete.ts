import { z } from 'zod';
import { defineTool } from './tool-module';
import { ToolRefusal } from './tool-refusal';

/** The control tool that ends a job; the workflow settles it, it never reaches the tools queue. */
export const complete = defineTool({
  name: 'complete',
  description: 'Finish the job. Call this alone, once the goal is reached, with a short summary of what was done.',
  category: 'control',
  risk: 'low',
  needs: [],
  parameters: z.strictObject({ summary: z.string().min(1).max(4000).describe('What was done, in a few sentences.') }),
  targetFields: [],
  prepare: () => Promise.resolve({ observed: [], problems: [] }),
  execute: () => Promise.reject(new ToolRefusal('complete is settled by the job, never run as a tool')),
});
