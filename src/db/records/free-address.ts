/** The free-address index of a subnet (network/free-addresses.ts). */
export interface SubnetAllocationRecord {
  subnet_id: string;
  /** The allocation pools the subnet's free ranges were laid along, as JSON; '' before the first. */
  pools: string;
}

/** Addresses `first_key`..`last_key` of a subnet that no port held when the range was written. */
export interface FreeAddressRecord {
  subnet_id: string;
  /** An address as a fixed-width decimal (network/free-addresses.ts `addressKey`), so text order is address order. */
  first_key: string;
  last_key: string;
}
