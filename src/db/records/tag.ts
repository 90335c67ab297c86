/** A tag of any tree object, in its own table so that lists can filter by tags in SQL. */
export interface TagRecord {
  resource_id: string;
  tag: string;
}
