/** No placement has this id (code `placement_not_found`, HTTP 404). */
export class PlacementNotFoundError extends Error {
  readonly code = 'placement_not_found';
  readonly retryable = false;
  constructor(readonly placementId: string) {
    super(`no placement ${placementId}`);
  }
}

/** The placement has ended before (code `placement_already_ended`, HTTP 409); names when and why. */
export class PlacementAlreadyEndedError extends Error {
  readonly code = 'placement_already_ended';
  readonly retryable = false;
  constructor(
    readonly placementId: string,
    readonly endedAt: string,
    readonly endReason: string,
  ) {
    super(`placement ${placementId} already ended at ${endedAt} (${endReason})`);
  }
}
