import { sha256Hex } from '../util/sha256';
import { type Notice, type NoticeEvent } from './notice';

/** ntfy's priority (1–5) and tags (emoji short codes) per event. */
const ntfyStyle: Record<NoticeEvent | 'denied' | 'edited', { priority: number; tags: string[] }> = {
  approval_requested: { priority: 4, tags: ['hourglass_flowing_sand'] },
  approval_expired: { priority: 3, tags: ['alarm_clock'] },
  approval_decided: { priority: 3, tags: ['white_check_mark'] },
  edited: { priority: 3, tags: ['pencil2'] },
  denied: { priority: 3, tags: ['no_entry'] },
  admin_notification: { priority: 4, tags: ['warning'] },
  call_executed: { priority: 2, tags: ['heavy_check_mark'] },
  call_not_run: { priority: 3, tags: ['x'] },
  job_cancelled: { priority: 2, tags: ['stop_sign'] },
  job_ended: { priority: 2, tags: ['checkered_flag'] },
};

/**
 * ntfy's sequence id of a request's notices: "Approval needed" is replaced
 * by what became of it (ntfy 2.16 and later; older servers ignore the field
 * and show each notice on its own). Letters, digits, - and _ only.
 */
export function ntfySequenceId(jobId: string, requestId: string): string {
  return `airlock-${sha256Hex(`${jobId}\n${requestId}`).slice(0, 32)}`;
}

export interface NtfyAction {
  readonly action: 'view';
  readonly label: string;
  readonly url: string;
  readonly clear: boolean;
}

/** The JSON message ntfy publishes (https://docs.ntfy.sh/publish/#publish-as-json), posted to the server's root. */
export interface NtfyMessage {
  readonly topic: string;
  readonly title: string;
  readonly message: string;
  readonly priority: number;
  readonly tags: readonly string[];
  readonly click: string;
  readonly actions: readonly NtfyAction[];
  /** Notices of one request share it, so the phone shows one notification per request. */
  readonly sequence_id?: string;
}

export function ntfyMessage(notice: Notice, topic: string): NtfyMessage {
  const outcome = notice.decision?.outcome;
  const style = outcome === 'denied' || outcome === 'edited' ? ntfyStyle[outcome] : ntfyStyle[notice.event];
  const actions: NtfyAction[] = [{ action: 'view', label: 'Open job', url: notice.links.job, clear: false }];
  if (notice.links.approval !== null) actions.push({ action: 'view', label: 'Decide', url: notice.links.approval, clear: true });
  return {
    topic,
    title: notice.title,
    message: notice.text,
    priority: style.priority,
    tags: ['airlock', ...style.tags, notice.event],
    click: notice.links.approval ?? notice.links.job,
    actions,
    ...(notice.requestId !== null ? { sequence_id: ntfySequenceId(notice.jobId, notice.requestId) } : {}),
  };
}
